// Package sysinfo describes the machine and the build a result came from:
// gpuz's version and VCS revision, Go, the operating system and kernel, the
// CPU, the cores and the memory, so that a saved or pasted result says
// where it was measured. It reads only what is cheap (the build info and a
// few files of /proc) and never fails: what it cannot read it reports as
// Unknown.
package sysinfo

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Unknown stands for a fact the build or the machine does not say: the VCS
// fields of a binary built without VCS stamping (go run, go test, a build
// with -buildvcs=false), or a /proc file that is missing.
const Unknown = "unknown"

// Version is gpuz's release, set at link time with
// -ldflags "-X gpuz/internal/sysinfo.Version=…".
var Version = "0.1.0-dev"

// Build describes the gpuz binary.
type Build struct {
	Version   string // the release (Version)
	Revision  string // vcs.revision: the commit it was built from, or Unknown
	Time      string // vcs.time: the commit's time (RFC 3339), or Unknown
	Modified  string // vcs.modified: "true" when built from a dirty tree, "false", or Unknown
	GoVersion string // the Go toolchain, e.g. "go1.26.0"
}

// Env is the environment of a run: the build, the machine, the host BLAS
// and its threads, the GPU's description, when and how the run was
// started. Collect fills the build and the machine; the runner fills the
// rest.
type Env struct {
	Build
	OS          string // GOOS/GOARCH, e.g. "linux/amd64"
	Kernel      string // the kernel release, e.g. "6.8.0-45-generic", or Unknown
	CPU         string // the CPU model, e.g. "AMD EPYC 7B13", or Unknown
	Cores       int    // logical CPUs
	MemoryBytes int64  // the host's total memory; 0 when unknown
	BLAS        string // the host BLAS in use
	Threads     int    // host threads in force
	// HugePages says whether large host buffers use transparent huge
	// pages: the kernel's setting and what gpuz does with it, as
	// "madvise: used" or "never: not available".
	HugePages string
	// GPU describes the device of the cuda and cache modes as it describes
	// itself (device.Caps.Description): name, memory and, on a CUDA GPU, driver
	// and PCI facts; nil when no mode ran on one.
	GPU         map[string]string
	Start       time.Time // when the run started
	CommandLine string    // the command line, shell-quoted
	Seed        uint64
}

// ReadBuild describes this binary from its embedded build info.
func ReadBuild() Build {
	b := Build{Version: Version, Revision: Unknown, Time: Unknown, Modified: Unknown, GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value
		}
	}
	return b
}

// ShortRevision is the revision's first 12 characters with "-dirty" for a
// modified tree, as one word for a header line.
func (b Build) ShortRevision() string {
	r := b.Revision
	if len(r) > 12 {
		r = r[:12]
	}
	if b.Modified == "true" {
		r += "-dirty"
	}
	return r
}

// Collect describes the build and this machine, and sets Start to now.
func Collect() Env {
	return Env{
		Build:       ReadBuild(),
		OS:          runtime.GOOS + "/" + runtime.GOARCH,
		Kernel:      kernelRelease("/proc/sys/kernel/osrelease"),
		CPU:         cpuModel("/proc/cpuinfo"),
		Cores:       runtime.NumCPU(),
		MemoryBytes: memTotal("/proc/meminfo"),
		Start:       time.Now(),
	}
}

// kernelRelease reads the kernel release from file, or Unknown.
func kernelRelease(file string) string {
	data, err := os.ReadFile(file)
	if s := strings.TrimSpace(string(data)); err == nil && s != "" {
		return s
	}
	return Unknown
}

// cpuModel reads the first "model name" of a file in /proc/cpuinfo's
// format, or Unknown (some architectures name no model there).
func cpuModel(file string) string {
	v := field(file, "model name", ":")
	if v == "" {
		return Unknown
	}
	return strings.Join(strings.Fields(v), " ")
}

// memTotal reads MemTotal, in bytes, from a file in /proc/meminfo's
// format, or 0.
func memTotal(file string) int64 {
	f := strings.Fields(field(file, "MemTotal", ":"))
	if len(f) != 2 || f[1] != "kB" {
		return 0
	}
	kb, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0
	}
	return kb << 10
}

// field returns the value after sep on the first line of file whose key
// (before sep, trimmed) is key, trimmed; "" when there is none.
func field(file, key, sep string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// CommandLine joins args as a POSIX shell would read them back: an
// argument of only safe characters as it is, any other in single quotes.
func CommandLine(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

// shellQuote quotes one argument for a POSIX shell.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
