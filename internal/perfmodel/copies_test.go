package perfmodel

import (
	"testing"
	"time"
)

// TestPredictCopies pins the copy and migration terms of Predict, each
// worked out by hand on a profile with round rates (pinned 10 GB/s up
// and 8 GB/s down, pageable 5 GB/s up and 2.5 GB/s down, no PCIe link:
// every rate differs, so a term priced at another's rate shows), fractions
// of 1 and 100 µs a copy; the kernel "Add" moves 1e8 bytes at 100 GB/s:
// 1 ms. The bound takes the fastest rate each way, pinned or pageable: on
// a host whose pageable copies outrun its pinned ones (fast), pageable's.
func TestPredictCopies(t *testing.T) {
	p := Profile{Name: "p", FP32: 1e12, MemBandwidth: 1e11, PinnedH2D: 1e10, PinnedD2H: 8e9, PageableH2D: 5e9, PageableD2H: 2.5e9}
	fast := p
	fast.PageableH2D, fast.PageableD2H = 2e10, 1.6e10
	e := Efficiency{Dense: 1, Elementwise: 1, Bandwidth: 1, Copy: 1, CopyOverhead: 100 * time.Microsecond}
	add := []Kernel{{Name: "Add", Bytes: 1e8}}
	const mib = 1 << 20
	for _, tc := range []struct {
		name      string
		fast      bool // the profile whose pageable rates outrun its pinned ones
		kernels   []Kernel
		copies    Copies
		model     float64 // seconds, besides the faults
		faults    int     // the faults the model adds, FaultCost each
		bound     float64 // seconds, or 0 not checked
		whatBreak string
	}{
		{"a partial fault batch costs a whole fault", false, nil, Copies{H2DBytes: 3 * mib, Migrated: true},
			3 * mib / 1e10, 2, 0, "1 fault for 1.5 batches (Floor for Ceil)"},
		{"a migration waits on compute, never overlaps it", false, add, Copies{H2DBytes: 2 * mib, Migrated: true},
			1e-3 + 2*mib/1e10, 1, 0, "migrations overlapping the kernels (sync from SyncBytes)"},
		{"in-place accesses cross the bus at the pinned upload rate", false, nil, Copies{RemoteBytes: 1e9},
			1e9 / 1e10, 0, 1e9 / 1e10, "remote bytes at the pageable or the download rate, or out of the bound"},
		{"a pinned download runs at the pinned download rate", false, nil, Copies{D2HBytes: 1e9, SyncBytes: 1e9, Count: 1},
			1e9/8e9 + 100e-6, 0, 1e9 / 8e9, "the upload rate for the download"},
		{"a pageable download runs at the pageable download rate", false, nil, Copies{D2HBytes: 1e9, SyncBytes: 1e9, Count: 1, Pageable: true},
			1e9/2.5e9 + 100e-6, 0, 1e9 / 8e9, "the upload rate for the download"},
		{"a pageable upload runs at the pageable upload rate", false, nil, Copies{H2DBytes: 1e9, SyncBytes: 1e9, Count: 1, Pageable: true},
			1e9/5e9 + 100e-6, 0, 1e9 / 1e10, "the download rate for the upload"},
		{"the bound of a fast pageable upload", true, nil, Copies{H2DBytes: 1e9, SyncBytes: 1e9, Count: 1, Pageable: true},
			1e9/2e10 + 100e-6, 0, 1e9 / 2e10, "the bound at the pinned rate alone"},
		{"the bound of a fast pageable download", true, nil, Copies{D2HBytes: 1e9, SyncBytes: 1e9, Count: 1, Pageable: true},
			1e9/1.6e10 + 100e-6, 0, 1e9 / 1.6e10, "the bound at the pinned rate alone"},
		{"a copy of no bytes is waited for", false, add, Copies{Count: 3},
			1e-3 + 3*100e-6, 0, 0, "copy overheads overlapping the kernels"},
	} {
		want := tc.model + float64(tc.faults)*FaultCost.Seconds()
		prof := p
		if tc.fast {
			prof = fast
		}
		got := Predict(tc.kernels, tc.copies, prof, e)
		if d := got.Model.Seconds() - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: model %v, want %.7f s (a break such as %s gives another)", tc.name, got.Model, want, tc.whatBreak)
		}
		if d := got.Bound.Seconds() - tc.bound; tc.bound > 0 && (d > 1e-9 || d < -1e-9) {
			t.Errorf("%s: bound %v, want %.7f s", tc.name, got.Bound, tc.bound)
		}
	}
}
