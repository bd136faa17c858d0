package report

import (
	"fmt"
	"time"

	"gpuz/internal/results"
	"gpuz/internal/sysinfo"
	"gpuz/internal/termsafe"
)

// toJSONEnv converts a run's environment, or returns nil for one never
// collected (a header built by hand).
func toJSONEnv(e sysinfo.Env) *results.Env {
	if e.Version == "" {
		return nil
	}
	return &results.Env{
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
	return fmt.Sprintf("env: gpuz %s %s on %s (%s)\n", e.Version, rev, termsafe.String(e.CPU), plural(int64(e.Cores), "core"))
}
