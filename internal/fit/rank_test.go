package fit

import (
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
	"gpuz/internal/levers"
)

// TestRankTies checks fit's tie rule and what a lever that changes the
// results must gain: each row's entries ranked, the first recommended,
// and the reason's wording where the recommended is not the fastest.
func TestRankTies(t *testing.T) {
	type lever struct {
		r levers.Recompute
		p levers.Precision
		a levers.Attention
	}
	entry := func(mode bench.Mode, l lever, predicted time.Duration) Entry {
		e := Entry{Candidate: Candidate{Mode: mode, Config: bench.Config{Set: levers.Set{Recompute: l.r, Precision: l.p, Attention: l.a}}}, Fits: true}
		if mode == bench.ModeCache {
			e.Cache = cache.Config{Policy: cache.Auto, Window: 2}
		}
		e.Plan.Prediction = &bench.Prediction{}
		e.Plan.Prediction.Model = predicted
		return e
	}
	none := lever{}
	rec := lever{r: levers.RecomputeBlocks}
	bf16 := lever{p: levers.BF16}
	fused := lever{a: levers.AttentionFused}
	eager := lever{a: levers.AttentionEager}
	us := time.Microsecond
	for _, tt := range []struct {
		name   string
		in     []Entry
		want   string // the ranking, first to last
		reason string // in Reason, "" for none to check
	}{
		// Attention evaluation, --take 20: 15 µs of 254 ms.
		{"a mode ties: cuda before managed", []Entry{entry(bench.ModeManaged, none, 254000*us), entry(bench.ModeCUDA, none, 254015*us)},
			"cuda|managed", "a tie within 5%"},
		{"a mode ties with levers alike", []Entry{entry(bench.ModeManaged, rec, 1059*time.Millisecond), entry(bench.ModeCUDA, rec, 1060*time.Millisecond)},
			"cuda, recompute blocks|managed, recompute blocks", "a tie within 5%"},
		{"a lever ties: none before recompute", []Entry{entry(bench.ModeCache, rec, 1420*us), entry(bench.ModeCache, none, 1440*us)},
			"cache auto policy, 2 blocks|cache auto policy, 2 blocks, recompute blocks", "a tie within 5%"},
		{"16 bits tie: fp32 first", []Entry{entry(bench.ModeCUDA, bf16, 22500*us), entry(bench.ModeCUDA, none, 23000*us)},
			"cuda|cuda, bf16", "a tie within 5%"},
		// 3.4 ms of 23: more than a tie, less than what changing the
		// results must gain.
		{"16 bits that gain 15%: fp32 first", []Entry{entry(bench.ModeCUDA, bf16, 19600*us), entry(bench.ModeCUDA, none, 23000*us)},
			"cuda|cuda, bf16", "changes the results and is not faster by more than 25%"},
		{"fused attention that gains 13%: eager first", []Entry{entry(bench.ModeCUDA, fused, 20*time.Millisecond), entry(bench.ModeCUDA, none, 23*time.Millisecond)},
			"cuda|cuda, fused attention", "changes the results"},
		// issue 44 item 11: SmolLM2-135M on rtx4060-laptop, the llm's own
		// (fused) attention at 675 ms ties eager at 669.
		{"the other attention ties: the workload's own first", []Entry{entry(bench.ModeCUDA, eager, 669*time.Millisecond), entry(bench.ModeCUDA, none, 675*time.Millisecond)},
			"cuda|cuda, eager attention", "a tie within 5%"},
		{"16 bits that gain more than 25%", []Entry{entry(bench.ModeCUDA, bf16, 10*time.Millisecond), entry(bench.ModeCUDA, none, 23*time.Millisecond)},
			"cuda, bf16|cuda", "fastest that fits: cuda, bf16"},
		{"16 bits the only way to fit", []Entry{entry(bench.ModeCache, bf16, 30*time.Millisecond)},
			"cache auto policy, 2 blocks, bf16", "fastest that fits: cache auto policy, 2 blocks, bf16"},
		{"faster by more than a tie", []Entry{entry(bench.ModeCUDA, none, 254*time.Millisecond), entry(bench.ModeManaged, none, 200*time.Millisecond)},
			"managed|cuda", "fastest that fits: managed"},
		// cuda ties cache but managed beats it: it waits for managed.
		{"no entry above one that beats it", []Entry{entry(bench.ModeCUDA, none, 108*time.Millisecond), entry(bench.ModeCache, none, 104*time.Millisecond),
			entry(bench.ModeManaged, none, 100*time.Millisecond)},
			"cache auto policy, 2 blocks|managed|cuda", "a tie within 5%"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ranked := rankByPrediction(tt.in)
			var names []string
			for _, e := range ranked {
				names = append(names, e.Candidate.String())
			}
			if got := strings.Join(names, "|"); got != tt.want {
				t.Errorf("ranked %q, want %q", got, tt.want)
			}
			r := Result{Ranked: ranked}
			if reason := r.Reason(); !strings.Contains(reason, tt.reason) {
				t.Errorf("reason %q, want it to say %q", reason, tt.reason)
			}
		})
	}
}

// TestChangesResults: 16 bits and the other attention change the
// results, recompute does not.
func TestChangesResults(t *testing.T) {
	for _, tt := range []struct {
		cfg  bench.Config
		want bool
	}{
		{bench.Config{}, false},
		{bench.Config{Set: levers.Set{Recompute: levers.RecomputeBlocks, Precision: levers.FP32}}, false},
		{bench.Config{Set: levers.Set{Precision: levers.BF16}}, true},
		{bench.Config{Set: levers.Set{Precision: levers.FP16}}, true},
		{bench.Config{Set: levers.Set{Attention: levers.AttentionEager}}, true},
	} {
		if got := (Candidate{Mode: bench.ModeCUDA, Config: tt.cfg}).ChangesResults(); got != tt.want {
			t.Errorf("%+v: ChangesResults %v, want %v", tt.cfg, got, tt.want)
		}
	}
}
