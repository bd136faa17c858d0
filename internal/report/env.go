package report

import (
	"fmt"

	"gpuz/internal/results"
	"gpuz/internal/sysinfo"
	"gpuz/internal/termsafe"
)

// envLine is the header's one line of the environment, so that a pasted
// table says which build and machine it came from, as in
//
//	env: gpuz 0.1.0-dev 0123456789ab-dirty on AMD EPYC 7B13 64-Core Processor (16 cores)
//
// or "" for an environment never collected (nil).
func envLine(e *results.Env) string {
	if e == nil {
		return ""
	}
	rev := sysinfo.Build{Revision: e.Revision, Modified: e.Modified}.ShortRevision()
	if e.Revision == sysinfo.Unknown {
		rev = "(revision unknown)"
	}
	return fmt.Sprintf("env: gpuz %s %s on %s (%s)\n", e.GpuzVersion, rev, termsafe.String(e.CPU), plural(int64(e.Cores), "core"))
}
