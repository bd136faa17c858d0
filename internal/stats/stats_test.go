package stats

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name string
		in   []time.Duration
		want Summary
	}{
		{"nil", nil, Summary{}},
		{"empty", []time.Duration{}, Summary{}},
		{"one", []time.Duration{3 * s},
			Summary{N: 1, Mean: 3 * s, Stddev: 0, Median: 3 * s, Min: 3 * s, Max: 3 * s}},
		{"two: median is the mean of both", []time.Duration{4 * s, 1 * s},
			Summary{N: 2, Mean: 2500 * time.Millisecond, Stddev: 2121320344, Median: 2500 * time.Millisecond, Min: s, Max: 4 * s}},
		{"odd, unsorted", []time.Duration{5 * s, 1 * s, 3 * s},
			Summary{N: 3, Mean: 3 * s, Stddev: 2 * s, Median: 3 * s, Min: s, Max: 5 * s}},
		// Sample variance 32/7, so the deviation is √(32/7) s = 2.138089935299… s.
		{"even count", []time.Duration{2 * s, 4 * s, 4 * s, 4 * s, 5 * s, 5 * s, 7 * s, 9 * s},
			Summary{N: 8, Mean: 5 * s, Stddev: 2138089935, Median: 4500 * time.Millisecond, Min: 2 * s, Max: 9 * s}},
		{"all equal", []time.Duration{7, 7, 7, 7},
			Summary{N: 4, Mean: 7, Stddev: 0, Median: 7, Min: 7, Max: 7}},
		// The mean 1.5 ns rounds down; the deviation, 0.707… ns, to the nearest.
		{"nanoseconds", []time.Duration{1, 2},
			Summary{N: 2, Mean: 1, Stddev: 1, Median: 1, Min: 1, Max: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			if got := Summarize(in); got != tt.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("Summarize reordered its input: %v", in)
			}
		})
	}
}

// TestMeanCI: the mean ± t·s/√n at 95%, with t from Student's t of n−1
// degrees of freedom: for 1, 2, 3 (s = 1, t = 4.303), the interval is
// 2 ± 2.484; for two values 1, 3 (s = √2, t = 12.706), 2 ± 12.706; one
// value has no interval.
func TestMeanCI(t *testing.T) {
	for _, tc := range []struct {
		values     []float64
		center, lo float64
	}{
		{[]float64{1, 2, 3}, 2, 2 - 4.302653 /*t*/ *1/math.Sqrt(3)},
		{[]float64{1, 3}, 2, 2 - 12.706205},
	} {
		s := MeanCI(tc.values)
		if math.Abs(s.Center-tc.center) > 1e-9 || math.Abs(s.Lo-tc.lo) > 1e-5 || math.Abs((s.Hi-s.Center)-(s.Center-s.Lo)) > 1e-12 {
			t.Errorf("%v: %v [%v, %v], want %v from %v", tc.values, s.Center, s.Lo, s.Hi, tc.center, tc.lo)
		}
	}
	if s := MeanCI([]float64{5}); s.Center != 5 || !math.IsInf(s.Hi, 1) || len(s.Warnings) != 1 {
		t.Errorf("one value: %+v", s)
	}
}
