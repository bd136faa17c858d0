package selftest

import (
	"testing"

	"gpuz/internal/report"
)

// Result is what report.WriteSelftest prints.
var _ report.SelftestResult = Result{}

func TestResultRows(t *testing.T) {
	r := Result{Device: "sim", Checks: []Check{
		{Kind: "kernel", Name: "gemm"},
		{Kind: "training", Name: "linear", MaxErr: 2, Tolerance: 1, Problem: "too far"},
	}}
	if r.DeviceName() != "sim" || r.CheckCount() != 2 || r.Failed() != 1 {
		t.Fatalf("DeviceName %q, CheckCount %d, Failed %d", r.DeviceName(), r.CheckCount(), r.Failed())
	}
	name, kind, maxErr, tol, problem := r.CheckRow(1)
	if name != "linear" || kind != "training" || maxErr != 2 || tol != 1 || problem != "too far" {
		t.Errorf("CheckRow(1) = %q %q %v %v %q", name, kind, maxErr, tol, problem)
	}
}
