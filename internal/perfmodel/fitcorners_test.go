package perfmodel

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"
)

// cornerStart is the profile the corner cases start from: fitTruth's
// peaks (memory 20 GB/s, copies 10 GB/s but pageable downloads at 5 GB/s)
// without fitted factors, copies at
// a fraction of 1 (so a copy factor kept is 1 s per second of copy at the
// peak) and 700 ns a kernel.
func cornerStart() Profile {
	p := fitTruth
	p.PageableD2H = 5e9
	p.Fitted = &Efficiency{Dense: 0.5, Elementwise: 0.25, Bandwidth: 0.5, Copy: 1, CopyOverhead: 3 * time.Microsecond}
	return p
}

// upload is a sample of count pinned uploads of seconds' worth of bytes at
// the profile's 10 GB/s, measured at ms milliseconds.
func upload(seconds float64, count int64, ms float64) Sample {
	return Sample{Name: "upload", Copies: Copies{H2DBytes: int64(seconds * 1e10), SyncBytes: int64(seconds * 1e10), Count: count},
		Time: time.Duration(ms * 1e6)}
}

// download is a sample of count pageable downloads of seconds' worth of
// bytes at the profile's pageable 5 GB/s, measured at ms milliseconds.
func download(seconds float64, count int64, ms float64) Sample {
	return Sample{Name: "download", Copies: Copies{D2HBytes: int64(seconds * 5e9), SyncBytes: int64(seconds * 5e9), Count: count, Pageable: true},
		Time: time.Duration(ms * 1e6)}
}

// adds is a sample of one Add kernel moving seconds' worth of bytes at the
// profile's 20 GB/s, measured at ms milliseconds.
func adds(seconds float64, ms float64) Sample {
	return Sample{Name: "add", Kernels: []Kernel{{Name: "Add", Launches: 1, Bytes: int64(seconds * 2e10)}}, Time: time.Duration(ms * 1e6)}
}

// TestFitCorners pins the least-squares fit's corner cases, each solved
// by hand. Copy samples have two unknowns, the seconds per second of copy
// at the peak (c, the inverse of Copy) and per copy (o, CopyOverhead);
// Add samples the seconds per second of memory traffic (b, the inverse of
// Bandwidth) and per kernel (k, KernelOverhead). The fit minimises
// Σ((row·x − t)/t)², so with one unknown x = Σ(aᵢ·bᵢ)/Σaᵢ², aᵢ the row
// over t and bᵢ what is left of t over t.
func TestFitCorners(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []Sample
		copy    float64       // the fitted Copy, 0 not checked
		copyOH  time.Duration // the fitted CopyOverhead, -1 not checked
		bw      float64       // the fitted Bandwidth, 0 not checked
		kernOH  time.Duration // the fitted KernelOverhead, 0 not checked
		kept    string        // a factor Kept must list, "" none
	}{
		// As many samples as factors: c·1 ms + o = 1.5 ms and c·2 ms + o
		// = 2.5 ms give c = 1, o = 0.5 ms exactly.
		{name: "as many samples as factors", samples: []Sample{upload(1e-3, 1, 1.5), upload(2e-3, 1, 2.5)},
			copy: 1, copyOH: 500 * time.Microsecond},
		// The same with pageable downloads, timed at their own rate.
		{name: "pageable downloads at their rate", samples: []Sample{download(1e-3, 1, 1.5), download(2e-3, 1, 2.5)},
			copy: 1, copyOH: 500 * time.Microsecond},
		// c·1 ms + o = 2 ms, c·1 ms + 2o = 1 ms: o = −1 ms, below 0, so o
		// is 0 and c is refitted alone: a = (0.5, 1), b = (1, 1), c =
		// 1.5/1.25 = 1.2, Copy = 1/1.2.
		{name: "a negative fixed cost is 0", samples: []Sample{upload(1e-3, 1, 2), upload(1e-3, 2, 1)},
			copy: 1 / 1.2, copyOH: 0},
		// c·1 ms + o = 5 ms, c·2 ms + o = 4 ms: c = −1, not a rate, so c
		// keeps its start, 1, and its share comes off each time before o
		// is refitted: b = ((5−1)/5, (4−2)/4) = (0.8, 0.5), a = (1/5,
		// 1/4) per ms, o = (0.16 + 0.125)/(0.04 + 0.0625) ms = 2.780488 ms.
		{name: "a kept rate's share comes off the times", samples: []Sample{upload(1e-3, 1, 5), upload(2e-3, 1, 4)},
			copy: 1, copyOH: 2780488 * time.Nanosecond, kept: FactorCopy},
		// c·1 ms + o = 4 ms, c·2 ms + o = 4 ms: c = 0 exactly, not a
		// rate: kept at 1; then b = (0.75, 0.5), a = (0.25, 0.25) per ms,
		// o = 0.3125/0.125 ms = 2.5 ms.
		{name: "a rate fitted at zero is kept", samples: []Sample{upload(1e-3, 1, 4), upload(2e-3, 1, 4)},
			copy: 1, copyOH: 2500 * time.Microsecond, kept: FactorCopy},
		// b·1 ms + k = 1 ms, b·2 ms + k = 3 ms: k = −1 ms, so 0; b
		// refitted alone: a = (1, 2/3), b = (1, 1), b = (5/3)/(13/9) =
		// 15/13, Bandwidth 13/15. A KernelOverhead of 0 is 1 ns: a profile
		// file reads 0 as missing.
		{name: "a kernel overhead fitted to 0 is 1 ns", samples: []Sample{adds(1e-3, 1), adds(2e-3, 3)},
			copyOH: -1, bw: 13.0 / 15, kernOH: time.Nanosecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Fit(cornerStart(), tc.samples)
			if err != nil {
				t.Fatal(err)
			}
			p := got.Profile
			e := p.Efficiency()
			if tc.copy > 0 && !relClose(e.Copy, tc.copy) {
				t.Errorf("Copy %g, want %g", e.Copy, tc.copy)
			}
			if tc.copyOH >= 0 && math.Abs(float64(e.CopyOverhead-tc.copyOH)) > 2 {
				t.Errorf("CopyOverhead %v, want %v", e.CopyOverhead, tc.copyOH)
			}
			if tc.bw > 0 && !relClose(e.Bandwidth, tc.bw) {
				t.Errorf("Bandwidth %g, want %g", e.Bandwidth, tc.bw)
			}
			if tc.kernOH > 0 && p.KernelOverhead != tc.kernOH {
				t.Errorf("KernelOverhead %v, want %v", p.KernelOverhead, tc.kernOH)
			}
			if tc.kept != "" && !slices.Contains(got.Kept, tc.kept) {
				t.Errorf("kept %v, want %s among them", got.Kept, tc.kept)
			}
			// What Fit returns, written and read back, is what it was.
			data, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			back, err := parseProfile(data)
			if err != nil {
				t.Fatalf("the fitted profile read back: %v", err)
			}
			if back.KernelOverhead != p.KernelOverhead || back.Efficiency().CopyOverhead != e.CopyOverhead {
				t.Errorf("read back: KernelOverhead %v and CopyOverhead %v, written %v and %v",
					back.KernelOverhead, back.Efficiency().CopyOverhead, p.KernelOverhead, e.CopyOverhead)
			}
		})
	}
}
