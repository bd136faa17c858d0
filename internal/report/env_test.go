package report

import (
	"io"
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/results"
	"gpuz/internal/sysinfo"
)

// testEnv returns an environment with its time and revision fixed, as
// the golden files hold it: a new one at each call, for the caller to
// change.
func testEnv() *results.Env {
	return bench.EnvDoc(sysinfo.Env{
		Build: sysinfo.Build{Version: "0.1.0-dev", Revision: "0123456789abcdef0123456789abcdef01234567",
			Time: "2026-01-02T03:04:05Z", Modified: "true", GoVersion: "go1.26.0"},
		OS: "linux/amd64", Kernel: "6.8.0-45-generic", CPU: "AMD EPYC 7B13 64-Core Processor", Cores: 16,
		MemoryBytes: 64 << 30, BLAS: "OpenBLAS 0.3.21", Threads: 2, HugePages: "madvise: used",
		GPU:         map[string]string{"name": "sim:8GiB", "kind": "simulated (host memory with a capacity; times are host times)", "memory_bytes": "8589934592"},
		Start:       time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC),
		CommandLine: "gpuz linear train cuda,cache,cpu --json 'my run.json'", Seed: 1,
	})
}

// TestHeaderEnvLine: the header gives one line of the environment, and
// says so when the build has no revision.
func TestHeaderEnvLine(t *testing.T) {
	header := func(h bench.Header) string {
		return written(t, func(w io.Writer) error { return WriteHeader(w, h) })
	}
	h := linearHeader
	h.Env = testEnv()
	if got := header(h); !strings.Contains(got, "\nenv: gpuz 0.1.0-dev 0123456789ab-dirty on AMD EPYC 7B13 64-Core Processor (16 cores)\n") {
		t.Errorf("header lacks the env line:\n%s", got)
	}
	h.Env.Revision, h.Env.Modified = sysinfo.Unknown, sysinfo.Unknown
	if got := header(h); !strings.Contains(got, "\nenv: gpuz 0.1.0-dev (revision unknown) on AMD EPYC") {
		t.Errorf("header without a revision:\n%s", got)
	}
	if got := header(linearHeader); strings.Contains(got, "env:") {
		t.Errorf("a header never collected has no env line:\n%s", got)
	}
}

// withEnv returns r with testEnv's environment in its header.
func withEnv(r bench.Result) bench.Result {
	r.Header.Env = testEnv()
	return r
}
