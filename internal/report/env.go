package report

import (
	"fmt"
	"time"

	"gpuz/internal/sysinfo"
)

// jsonEnv is the environment of a run in the JSON documents (sysinfo.Env):
// what was measured where, with which build, started how and when.
type jsonEnv struct {
	GpuzVersion string `json:"gpuz_version"`
	Revision    string `json:"revision"`   // "unknown" when the build has no VCS stamp
	BuildTime   string `json:"build_time"` // the revision's commit time, RFC 3339, or "unknown"
	Modified    string `json:"modified"`   // "true" for a dirty tree, "false", or "unknown"
	GoVersion   string `json:"go_version"`
	OS          string `json:"os"`
	Kernel      string `json:"kernel"`
	CPU         string `json:"cpu"`
	Cores       int    `json:"cores"`
	MemoryBytes int64  `json:"memory_bytes"`
	BLAS        string `json:"blas"`
	Threads     int    `json:"threads"`
	// HugePages is whether large host buffers use transparent huge pages,
	// as "madvise: used" or "never: not available" (sysinfo.Env.HugePages).
	HugePages string `json:"huge_pages"`
	// GPU is the GPU's own description (device.Caps.Description); null when no
	// mode ran on one.
	GPU         map[string]string `json:"gpu"`
	Start       string            `json:"start"` // RFC 3339
	CommandLine string            `json:"command_line"`
	Seed        uint64            `json:"seed"`
}

// toJSONEnv converts a run's environment, or returns nil for one never
// collected (a header built by hand).
func toJSONEnv(e sysinfo.Env) *jsonEnv {
	if e.Version == "" {
		return nil
	}
	return &jsonEnv{
		GpuzVersion: e.Version, Revision: e.Revision, BuildTime: e.Time, Modified: e.Modified,
		GoVersion: e.GoVersion, OS: e.OS, Kernel: e.Kernel, CPU: e.CPU, Cores: e.Cores,
		MemoryBytes: e.MemoryBytes, BLAS: e.BLAS, Threads: e.Threads, HugePages: e.HugePages, GPU: e.GPU,
		Start: e.Start.Format(time.RFC3339), CommandLine: e.CommandLine, Seed: e.Seed,
	}
}

// envLine is the header's one line of the environment, so that a pasted
// table says which build and machine it came from, as in
//
//	env: gpuz 0.1.0-dev 0123456789ab-dirty on AMD EPYC 7B13 64-Core Processor (16 cores)
//
// or "" for an environment never collected.
func envLine(e sysinfo.Env) string {
	if e.Version == "" {
		return ""
	}
	rev := e.ShortRevision()
	if e.Revision == sysinfo.Unknown {
		rev = "(revision unknown)"
	}
	return fmt.Sprintf("env: gpuz %s %s on %s (%s)\n", e.Version, rev, e.CPU, plural(int64(e.Cores), "core"))
}
