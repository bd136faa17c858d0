package fit

import (
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
	"gpuz/internal/levers"
)

// TestRankTieOrder pins the order within a tie (docs/fit.md): a
// configuration that keeps the results before one that changes them
// whatever their modes, 32 bits before 16 among those that change them,
// then the faster, then the smaller device need; and a difference of
// exactly TieFraction is still a tie.
func TestRankTieOrder(t *testing.T) {
	ms := time.Millisecond
	entry := func(mode bench.Mode, window int, cfg bench.Config, predicted time.Duration, device int64) Entry {
		e := Entry{Candidate: Candidate{Mode: mode, Config: cfg}, Fits: true}
		if mode == bench.ModeCache {
			e.Cache = cache.Config{Policy: cache.Auto, Window: window}
		}
		e.Plan.Prediction = &bench.Prediction{}
		e.Plan.Prediction.Model = predicted
		e.Plan.Footprint.Device = device
		return e
	}
	bf16 := bench.Config{Set: levers.Set{Precision: levers.BF16}}
	fused := bench.Config{Set: levers.Set{Attention: levers.AttentionFused}}
	for _, tt := range []struct {
		name string
		in   []Entry
		want string
	}{
		{"keeping the results comes before a simpler mode",
			[]Entry{entry(bench.ModeCUDA, 0, bf16, 100*ms, 1), entry(bench.ModeCache, 2, bench.Config{}, 100*ms, 1)},
			"cache auto policy, 2 blocks|cuda, bf16"},
		{"among levers that change the results, 32 bits first",
			[]Entry{entry(bench.ModeCUDA, 0, bench.Config{Set: levers.Set{Precision: levers.BF16, Attention: levers.AttentionFused}}, 100*ms, 1),
				entry(bench.ModeCUDA, 0, fused, 100*ms, 1)},
			"cuda, fused attention|cuda, bf16, fused attention"},
		{"as simple: the faster first",
			[]Entry{entry(bench.ModeCache, 3, bench.Config{}, 102*ms, 1), entry(bench.ModeCache, 2, bench.Config{}, 100*ms, 1)},
			"cache auto policy, 2 blocks|cache auto policy, 3 blocks"},
		{"as simple and as fast: the smaller device need first",
			[]Entry{entry(bench.ModeCache, 3, bench.Config{}, 100*ms, 3<<20), entry(bench.ModeCache, 2, bench.Config{}, 100*ms, 2<<20)},
			"cache auto policy, 2 blocks|cache auto policy, 3 blocks"},
		{"exactly 5% faster is a tie",
			[]Entry{entry(bench.ModeManaged, 0, bench.Config{}, 100*ms, 1), entry(bench.ModeCUDA, 0, bench.Config{}, 105*ms, 1)},
			"cuda|managed"},
		{"exactly 25% faster is not enough to change the results",
			[]Entry{entry(bench.ModeCUDA, 0, bf16, 100*ms, 1), entry(bench.ModeCUDA, 0, bench.Config{}, 125*ms, 1)},
			"cuda|cuda, bf16"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var names []string
			for _, e := range rankByPrediction(tt.in) {
				names = append(names, e.Candidate.String())
			}
			if got := strings.Join(names, "|"); got != tt.want {
				t.Errorf("ranked %q, want %q", got, tt.want)
			}
		})
	}
}
