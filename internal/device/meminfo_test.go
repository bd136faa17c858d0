package device

import (
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"gpuz/internal/hugemem"
)

// TestHostLimit builds fake /proc and /sys/fs/cgroup trees and fake
// rlimits: the least limit binds, a parent cgroup's limit binds its child,
// "max" and an unlimited rlimit are no limit.
func TestHostLimit(t *testing.T) {
	const gib = 1 << 30
	meminfo := "MemTotal:       33554432 kB\nMemAvailable:   16777216 kB\n" // 32 GiB, 16 GiB
	status := "Name:\tgpuz\nVmSize:\t 1048576 kB\nVmData:\t 524288 kB\n"    // 1 GiB, 512 MiB
	unlimited := func(int) (uint64, error) { return math.MaxUint64, nil }
	for _, tc := range []struct {
		name    string
		files   map[string]string
		rlimit  func(int) (uint64, error)
		want    int64
		binding string
	}{
		{"no limits", nil, unlimited, 16 * gib, "MemAvailable"},
		{"cgroup v2", map[string]string{
			"proc/self/cgroup":                   "0::/job\n",
			"sys/fs/cgroup/job/memory.max":       "4294967296\n",
			"sys/fs/cgroup/job/memory.current":   "1073741824\n",
			"sys/fs/cgroup/memory.max":           "max\n",
			"sys/fs/cgroup/other/memory.max":     "1\n",
			"sys/fs/cgroup/other/memory.current": "0\n",
		}, unlimited, 3 * gib, "cgroup memory.max"},
		{"cgroup v2 parent binds", map[string]string{
			"proc/self/cgroup":               "0::/a/b\n",
			"sys/fs/cgroup/a/b/memory.max":   "max\n",
			"sys/fs/cgroup/a/memory.max":     "2147483648\n",
			"sys/fs/cgroup/a/memory.current": "1073741824\n",
		}, unlimited, 1 * gib, "cgroup memory.max"},
		{"cgroup v2 namespaced", map[string]string{
			"proc/self/cgroup":             "0::/\n",
			"sys/fs/cgroup/memory.max":     "3221225472\n",
			"sys/fs/cgroup/memory.current": "0\n",
		}, unlimited, 3 * gib, "cgroup memory.max"},
		{"cgroup v1", map[string]string{
			"proc/self/cgroup": "4:memory:/box\n3:cpu:/\n",
			"sys/fs/cgroup/memory/box/memory.limit_in_bytes": "2147483648\n",
			"sys/fs/cgroup/memory/box/memory.usage_in_bytes": "536870912\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":     "9223372036854771712\n",
		}, unlimited, 1536 << 20, "cgroup memory.limit_in_bytes"},
		{"cgroup over its limit", map[string]string{
			"proc/self/cgroup":             "0::/\n",
			"sys/fs/cgroup/memory.max":     "100\n",
			"sys/fs/cgroup/memory.current": "200\n",
		}, unlimited, 0, "cgroup memory.max"},
		{"RLIMIT_AS", nil, func(r int) (uint64, error) {
			if r == syscall.RLIMIT_AS {
				return 3 * gib, nil
			}
			return math.MaxUint64, nil
		}, 2 * gib, "RLIMIT_AS"},
		{"RLIMIT_DATA", nil, func(r int) (uint64, error) {
			if r == syscall.RLIMIT_DATA {
				return 1 * gib, nil
			}
			return 8 * gib, nil
		}, 512 << 20, "RLIMIT_DATA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{"proc/meminfo": meminfo, "proc/self/status": status}
			for name, text := range tc.files {
				files[name] = text
			}
			for name, text := range files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := readHostLimit(root, tc.rlimit)
			if err != nil {
				t.Fatal(err)
			}
			if got.Bytes != tc.want || got.Binding != tc.binding {
				t.Errorf("limit %v, want %d B (%s)", got, tc.want, tc.binding)
			}
		})
	}
}

// TestHostLimitNoMeminfo reports a missing /proc/meminfo.
func TestHostLimitNoMeminfo(t *testing.T) {
	if _, err := readHostLimit(t.TempDir(), getrlimit); err == nil {
		t.Error("no error without /proc/meminfo")
	}
}

// TestHostLimitCountsKeptMemory checks that the memory hugemem keeps from
// a freed buffer is counted as this process's to allocate: the system
// counts it as used, yet the next mode takes it.
func TestHostLimitCountsKeptMemory(t *testing.T) {
	h := NewHost()
	b, err := h.Alloc(64 << 20) // 256 MiB
	if err != nil {
		t.Fatal(err)
	}
	h.Free(b)
	kept := hugemem.KeptBytes()
	if kept < 256<<20 {
		t.Skip("the buffer was not kept: huge pages are not offered here")
	}
	with, err := ReadHostLimit()
	if err != nil {
		t.Fatal(err)
	}
	without, err := readHostLimit("/", getrlimit)
	if err != nil {
		t.Fatal(err)
	}
	// The two reads are microseconds apart: what others allocate between
	// them is far below half the kept memory.
	if d := with.Bytes - without.Bytes; d < kept/2 || d > kept*3/2 {
		t.Errorf("ReadHostLimit gives %d bytes more than the limits read alone, want about the %d kept", d, kept)
	}
}
