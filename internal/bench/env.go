package bench

import (
	"time"

	"gpuz/internal/results"
	"gpuz/internal/sysinfo"
)

// EnvDoc is the environment e as the results document holds it
// (results.Env): the build, the machine, the GPU's description, the start
// time in RFC 3339, the command line and the seed.
func EnvDoc(e sysinfo.Env) *results.Env {
	return &results.Env{
		GpuzVersion: e.Version, Revision: e.Revision, BuildTime: e.Time, Modified: e.Modified,
		GoVersion: e.GoVersion, OS: e.OS, Kernel: e.Kernel, CPU: e.CPU, Cores: e.Cores,
		MemoryBytes: e.MemoryBytes, BLAS: e.BLAS, Threads: e.Threads, HugePages: e.HugePages, GPU: e.GPU,
		Start: e.Start.Format(time.RFC3339), CommandLine: e.CommandLine, Seed: e.Seed,
	}
}
