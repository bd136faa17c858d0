package device

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"gpuz/internal/hugemem"
)

// Meminfo is the host's memory as /proc/meminfo reports it, in bytes.
type Meminfo struct {
	Total     int64 // MemTotal
	Available int64 // MemAvailable: what new allocations can use without swapping
}

// ReadMeminfo reads /proc/meminfo.
func ReadMeminfo() (Meminfo, error) { return readMeminfo("/proc/meminfo") }

// readMeminfo reads a file in /proc/meminfo's format.
func readMeminfo(file string) (Meminfo, error) {
	f, err := os.Open(file)
	if err != nil {
		return Meminfo{}, fmt.Errorf("reading host memory: %w", err)
	}
	defer f.Close()
	var info Meminfo
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		var dst *int64
		switch fields[0] {
		case "MemTotal:":
			dst = &info.Total
		case "MemAvailable:":
			dst = &info.Available
		default:
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return Meminfo{}, fmt.Errorf("reading host memory: %s: %w", fields[0], err)
		}
		*dst = kb * 1024
		found++
	}
	if err := sc.Err(); err != nil {
		return Meminfo{}, fmt.Errorf("reading host memory: %w", err)
	}
	if found < 2 {
		return Meminfo{}, fmt.Errorf("reading host memory: %s lacks MemTotal or MemAvailable", file)
	}
	return info, nil
}

// HostLimit is how much more host memory this process can allocate: the
// least of the host's available memory, what its cgroup's limit leaves
// and what its address-space and data rlimits leave, with the name of the
// limit that binds.
type HostLimit struct {
	Bytes int64
	// Binding names the limit Bytes comes from: "MemAvailable",
	// "cgroup memory.max", "cgroup memory.limit_in_bytes", "RLIMIT_AS" or
	// "RLIMIT_DATA".
	Binding string
}

// String says how much memory the limit leaves and which binds.
func (l HostLimit) String() string { return fmt.Sprintf("%d B (%s)", l.Bytes, l.Binding) }

// ReadHostLimit returns this process's host memory limit, read from
// /proc, /sys/fs/cgroup and getrlimit, plus the memory that package
// hugemem keeps from freed buffers for the next ones: every limit counts
// it as used, yet the next allocations take it or hand it back first.
func ReadHostLimit() (HostLimit, error) {
	lim, err := readHostLimit("/", getrlimit)
	if err != nil {
		return lim, err
	}
	lim.Bytes += hugemem.KeptBytes()
	return lim, nil
}

// getrlimit returns a resource's soft limit; math.MaxUint64 is unlimited.
func getrlimit(resource int) (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(resource, &r); err != nil {
		return 0, err
	}
	return r.Cur, nil
}

// readHostLimit reads the limits under root, a file system root (a test
// directory in tests), asking rlimit for the soft rlimits.
func readHostLimit(root string, rlimit func(resource int) (uint64, error)) (HostLimit, error) {
	info, err := readMeminfo(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return HostLimit{}, err
	}
	lim := HostLimit{Bytes: info.Available, Binding: "MemAvailable"}
	lower := func(bytes int64, binding string) {
		if bytes < lim.Bytes {
			lim = HostLimit{Bytes: max(bytes, 0), Binding: binding}
		}
	}
	v1, v2 := cgroupPaths(filepath.Join(root, "proc/self/cgroup"))
	cg := filepath.Join(root, "sys/fs/cgroup")
	if v2 != "" {
		if left, ok := cgroupLeft(cg, v2, "memory.max", "memory.current"); ok {
			lower(left, "cgroup memory.max")
		}
	}
	if v1 != "" {
		if left, ok := cgroupLeft(filepath.Join(cg, "memory"), v1, "memory.limit_in_bytes", "memory.usage_in_bytes"); ok {
			lower(left, "cgroup memory.limit_in_bytes")
		}
	}
	status := readStatus(filepath.Join(root, "proc/self/status"))
	for _, r := range []struct {
		resource int
		name     string
		used     int64 // what the limit already counts
	}{
		{syscall.RLIMIT_AS, "RLIMIT_AS", status["VmSize:"]},
		{syscall.RLIMIT_DATA, "RLIMIT_DATA", status["VmData:"]},
	} {
		cur, err := rlimit(r.resource)
		if err != nil {
			return HostLimit{}, fmt.Errorf("reading host memory: %s: %w", r.name, err)
		}
		if cur < math.MaxInt64 {
			lower(int64(cur)-r.used, r.name)
		}
	}
	return lim, nil
}

// cgroupPaths reads the process's cgroup paths from a /proc/self/cgroup:
// the v1 memory controller's and the v2 hierarchy's, "" where absent.
func cgroupPaths(file string) (v1, v2 string) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			v1 = parts[2]
		}
	}
	return v1, v2
}

// cgroupLeft returns the least that a limit file leaves above its usage
// file over the cgroup at rel under mount and each of its ancestors (a
// parent's limit binds its children), and whether any limit was found. A
// cgroup namespace shows the process's cgroup at the mount itself, so the
// path is tried both as given and from the mount.
func cgroupLeft(mount, rel, limitFile, usageFile string) (int64, bool) {
	left, found := int64(math.MaxInt64), false
	seen := map[string]bool{}
	for _, start := range []string{path.Clean("/" + rel), "/"} {
		for dir := start; ; dir = path.Dir(dir) {
			full := filepath.Join(mount, dir)
			if !seen[full] {
				seen[full] = true
				if l, ok := readCgroupValue(filepath.Join(full, limitFile)); ok {
					u, _ := readCgroupValue(filepath.Join(full, usageFile))
					left, found = min(left, l-u), true
				}
			}
			if dir == "/" {
				break
			}
		}
	}
	return left, found
}

// readCgroupValue reads a cgroup file holding a byte count; "max" and
// absent files are no limit.
func readCgroupValue(file string) (int64, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// readStatus reads the kB fields of a /proc/self/status, in bytes, by
// their name with its colon.
func readStatus(file string) map[string]int64 {
	m := map[string]int64{}
	f, err := os.Open(file)
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[2] == "kB" {
			if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				m[fields[0]] = kb * 1024
			}
		}
	}
	return m
}
