package bench

import (
	"runtime"
	"testing"
)

// TestRuntimeHeadroom checks the headroom's arithmetic: the base, a BLAS
// thread per CPU at least, and a GOMAXPROCS share; more threads add.
func TestRuntimeHeadroom(t *testing.T) {
	n, p := int64(runtime.NumCPU()), int64(runtime.GOMAXPROCS(0))
	for _, tt := range []struct {
		threads int
		blas    int64
	}{
		{0, n},
		{1, n},
		{int(n) + 6, n + 6},
	} {
		want := int64(headroomBase) + tt.blas*headroomPerThread + p*headroomPerP
		if got := RuntimeHeadroom(tt.threads); got != want {
			t.Errorf("RuntimeHeadroom(%d) = %d, want %d", tt.threads, got, want)
		}
	}
}

// TestAddressSpaceNeed is the largest host need of the plan's modes (the
// cache mode's placements included) plus the headroom: not their sum.
func TestAddressSpaceNeed(t *testing.T) {
	opts := smallLinearRun(t, TaskTrain, ModeCUDA, ModeCache, ModeCPU)
	p, err := PlanMemory(opts, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var largest, sum int64
	for _, m := range p.Modes {
		largest = max(largest, m.HostNeed)
		sum += m.HostNeed
	}
	got, err := AddressSpaceNeed(opts)
	if want := largest + RuntimeHeadroom(opts.Threads); err != nil || got != want || largest == sum {
		t.Errorf("AddressSpaceNeed = %d, %v; want %d (largest of %d modes, %d, plus headroom)", got, err, want, len(p.Modes), largest)
	}
}
