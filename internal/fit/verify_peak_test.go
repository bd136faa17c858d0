package fit

import (
	"context"
	"math"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/models"
)

// TestVerifyManagedPeak verifies the managed mode searched at demo scale with 128 MiB free (the README's story)
// and the 5% margin: its run holds the margin as well as the take, so its
// peak is checked against its plan, within the budget, and the check is
// not left out (it was: the managed run took the whole free memory, margin
// included, and was printed ok over its plan and the budget).
func TestVerifyManagedPeak(t *testing.T) {
	opts := options(t, models.Linear, models.ScaleDemo, bench.TaskTrain)
	opts.Bench.Epochs = 1
	opts.TakeBytes = 8<<30 - 128<<20
	r, err := Search(opts)
	if err != nil {
		t.Fatal(err)
	}
	var pick Entry
	for _, e := range r.Ranked {
		if e.Mode == bench.ModeManaged && !e.HasLevers() {
			pick = e
			break
		}
	}
	if pick.Mode == "" {
		t.Fatal("no managed configuration ranked")
	}
	r.Ranked, r.CPU = []Entry{pick}, Entry{}
	v, err := Verify(context.Background(), opts, r, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Checks) != 1 {
		t.Fatalf("%d checks, want 1", len(v.Checks))
	}
	c := v.Checks[0]
	if !c.PeakChecked || !c.PeakMatches || c.Run.PeakDeviceBytes > r.Budget {
		t.Errorf("managed: peak %d (checked %t, matches %t), planned %d, budget %d; want checked, equal to the plan, within the budget",
			c.Run.PeakDeviceBytes, c.PeakChecked, c.PeakMatches, c.Plan.Footprint.Device, r.Budget)
	}
	if err := v.Err(); err != nil {
		t.Errorf("verification error %v, want none", err)
	}
	// A managed run whose peak went over its plan fails the verification.
	c.PeakMatches = false
	c.Run.PeakDeviceBytes = r.DeviceFree
	if err := (Verification{Checks: []Check{c}}).Err(); err == nil {
		t.Error("a managed peak over its plan passed")
	}
}

// TestKendallNeedsPoints: τ is not computed from fewer than MinTauPoints
// pairs (from two it is ±1 whatever the order, from three a full agreement
// happens by chance once in 6), and is from four.
func TestKendallNeedsPoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []float64
		want float64 // NaN: none
	}{
		{"none", nil, nil, math.NaN()},
		{"two", []float64{1, 2}, []float64{1, 2}, math.NaN()},
		{"three", []float64{1, 2, 3}, []float64{1, 2, 3}, math.NaN()},
		{"four agreeing", []float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, 1},
		{"four reversed", []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := kendall(tc.x, tc.y)
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
				t.Errorf("kendall = %g, want %g", got, tc.want)
			}
		})
	}
}
