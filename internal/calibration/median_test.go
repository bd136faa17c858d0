package calibration

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"gpuz/internal/perfmodel"
)

// TestMedianProfile takes the median of each measured rate across rounds
// (the mean of the middle two for an even count), each rate on its own,
// and keeps the rest of the first profile.
func TestMedianProfile(t *testing.T) {
	// rates makes a profile whose six measured rates are r, r+1, … r+5.
	rates := func(name string, r float64) perfmodel.Profile {
		return perfmodel.Profile{Name: name, MemoryBytes: 1 << 30, FP32: r, MemBandwidth: r + 1,
			PinnedH2D: r + 2, PinnedD2H: r + 3, PageableH2D: r + 4, PageableD2H: r + 5}
	}
	busy := rates("busy", 1) // a round on a busy machine: every rate low
	busy.MemBandwidth = 1000 // but one high: each rate's median is its own
	tests := []struct {
		name     string
		profiles []perfmodel.Profile
		want     perfmodel.Profile
	}{
		{"one", []perfmodel.Profile{rates("a", 10)}, rates("a", 10)},
		{"odd: the middle", []perfmodel.Profile{rates("a", 10), busy, rates("c", 20)},
			perfmodel.Profile{Name: "a", MemoryBytes: 1 << 30, FP32: 10, MemBandwidth: 21,
				PinnedH2D: 12, PinnedD2H: 13, PageableH2D: 14, PageableD2H: 15}},
		{"even: the mean of the middle two", []perfmodel.Profile{rates("a", 10), rates("b", 20), busy, rates("d", 40)},
			perfmodel.Profile{Name: "a", MemoryBytes: 1 << 30, FP32: 15, MemBandwidth: 31,
				PinnedH2D: 17, PinnedD2H: 18, PageableH2D: 19, PageableD2H: 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MedianProfile(tt.profiles)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("MedianProfile = %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if _, err := MedianProfile(nil); err == nil {
		t.Error("MedianProfile(nil): no error")
	}
}

// TestMedianSamples keeps, for each sample, the round's whose time per
// launch or per copy is the median (the lower middle one for an even
// count), whatever each round's repetitions; rounds of different lengths
// are an error naming the round.
func TestMedianSamples(t *testing.T) {
	// kernel is a sample of launches launches taking d in all; copies one
	// of count copies.
	kernel := func(launches int64, d time.Duration) perfmodel.Sample {
		return perfmodel.Sample{Name: "gemm", Kernels: []perfmodel.Kernel{{Name: "Gemm", Launches: launches}}, Time: d}
	}
	copies := func(count int64, d time.Duration) perfmodel.Sample {
		return perfmodel.Sample{Name: "h2d", Copies: perfmodel.Copies{H2DBytes: 1 << 20, Count: count}, Time: d}
	}
	ms := time.Millisecond
	tests := []struct {
		name    string
		rounds  [][]perfmodel.Sample
		want    []perfmodel.Sample
		wantErr string
	}{
		{name: "one round", rounds: [][]perfmodel.Sample{{kernel(10, 5*ms), copies(4, 2*ms)}},
			want: []perfmodel.Sample{kernel(10, 5*ms), copies(4, 2*ms)}},
		// Per launch: 1, 3 and 2 ms; per copy: 2, 1 and 4 ms. Each sample
		// takes its own round's, and the longest time in all is not the
		// slowest per unit.
		{name: "odd: per unit, each sample its own", rounds: [][]perfmodel.Sample{
			{kernel(10, 10*ms), copies(1, 2*ms)},
			{kernel(1, 3*ms), copies(8, 8*ms)},
			{kernel(20, 40*ms), copies(1, 4*ms)},
		}, want: []perfmodel.Sample{kernel(20, 40*ms), copies(1, 2*ms)}},
		{name: "even: the lower middle", rounds: [][]perfmodel.Sample{
			{kernel(1, 4*ms)}, {kernel(1, 1*ms)}, {kernel(1, 3*ms)}, {kernel(1, 2*ms)},
		}, want: []perfmodel.Sample{kernel(1, 2*ms)}},
		{name: "rounds of different lengths", rounds: [][]perfmodel.Sample{
			{kernel(1, ms), copies(1, ms)}, {kernel(1, ms), copies(1, ms)}, {kernel(1, ms)},
		}, wantErr: "round 3 timed 1 samples, round 1 2"},
		{name: "none", wantErr: "no rounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MedianSamples(tt.rounds)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("MedianSamples: error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("MedianSamples = %d samples, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i].Name != tt.want[i].Name || got[i].Time != tt.want[i].Time || perUnit(got[i]) != perUnit(tt.want[i]) {
					t.Errorf("sample %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
