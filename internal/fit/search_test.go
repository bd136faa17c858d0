package fit

import (
	"math"
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/levers"
)

// TestCandidates counts the search's candidates and checks its pruning:
// for b blocks of which a step needs m, the cpu, cuda, each of the three
// policies' windows m…b (the auto policy's twice when training, the
// optimizer on the host too), 2(b-1) hybrid splits and two managed
// placements; times two recompute settings when training, and three
// precisions. Without a device, the cpu alone (at each setting).
func TestCandidates(t *testing.T) {
	check := func(name string, blocks, minWindow int, train, gpu bool, want int) {
		t.Run(name, func(t *testing.T) {
			attention := levers.Attention("")
			if strings.Contains(name, "attention") {
				attention = levers.AttentionFused
			}
			cs := Candidates(blocks, minWindow, train, gpu, attention, nil, nil)
			if len(cs) != want {
				t.Errorf("%d candidates, want %d", len(cs), want)
			}
			seen := map[string]bool{}
			for _, c := range cs {
				key := c.String()
				if seen[key] {
					t.Errorf("%s searched twice", key)
				}
				seen[key] = true
				if c.Mode == bench.ModeCache && (c.Placement().Settings().Window < minWindow || c.Placement().Settings().Window > blocks) {
					t.Errorf("%s: window outside %d…%d", key, minWindow, blocks)
				}
				if c.Recompute.On() && !train {
					t.Errorf("%s: recompute when evaluating", key)
				}
			}
		})
	}
	check("3 blocks, train", 3, 1, true, true, 3*2*(1+1+3*4+4+2))
	check("3 blocks, eval", 3, 1, false, true, 3*(1+1+3*3+4+2))
	check("12 blocks, train", 12, 1, true, true, 3*2*(1+1+12*4+22+2))
	check("12 blocks of which a step needs 2, eval", 12, 2, false, true, 3*(1+1+11*3+22+2))
	check("no device, train", 12, 1, true, false, 3*2)
	check("no device, eval", 12, 1, false, false, 3)
	// A workload with attention layers: its own attention and the other.
	check("3 blocks, train, with attention", 3, 1, true, true, 2*3*2*(1+1+3*4+4+2))
	check("no device, eval, with attention", 12, 1, false, false, 2*3)
}

// TestDropUselessLevers keeps a candidate that sets a lever only where
// it needs less device memory, or is predicted faster, than the same
// candidate with that lever at its default.
func TestDropUselessLevers(t *testing.T) {
	entry := func(mode bench.Mode, r levers.Recompute, p levers.Precision, need int64, predicted time.Duration) Entry {
		e := Entry{Candidate: Candidate{Mode: mode, Config: bench.Config{Set: levers.Set{Recompute: r, Precision: p}}}}
		e.Plan.Footprint.Device = need
		if predicted > 0 {
			e.Plan.Prediction = &bench.Prediction{}
			e.Plan.Prediction.Model = predicted
		}
		return e
	}
	fits := func(e Entry) Entry { e.Fits = true; return e }
	none, blocks := levers.RecomputeNone, levers.RecomputeBlocks
	for _, tt := range []struct {
		name string
		in   []Entry
		want string
	}{
		{"recompute that saves", []Entry{entry(bench.ModeCUDA, none, levers.FP32, 100, 0), entry(bench.ModeCUDA, blocks, levers.FP32, 60, 0)},
			"cuda|cuda, recompute blocks"},
		{"recompute that saves nothing", []Entry{entry(bench.ModeManaged, none, levers.FP32, 100, 0), entry(bench.ModeManaged, blocks, levers.FP32, 100, 0)},
			"managed"},
		{"16 bits that save", []Entry{entry(bench.ModeCUDA, none, levers.FP32, 100, 0), entry(bench.ModeCUDA, none, levers.BF16, 50, 0), entry(bench.ModeCUDA, none, levers.FP16, 50, 0)},
			"cuda|cuda, bf16"},
		{"fp16 no better than bf16", []Entry{entry(bench.ModeCUDA, none, levers.BF16, 50, time.Second), entry(bench.ModeCUDA, none, levers.FP16, 50, time.Second)},
			"cuda, bf16"},
		{"fp16 smaller than bf16", []Entry{entry(bench.ModeCUDA, none, levers.BF16, 50, time.Second), entry(bench.ModeCUDA, none, levers.FP16, 40, time.Second)},
			"cuda, bf16|cuda, fp16"},
		{"16 bits neither smaller nor faster", []Entry{entry(bench.ModeManaged, none, "", 100, time.Second), entry(bench.ModeManaged, none, levers.BF16, 100, time.Second)},
			"managed"},
		{"16 bits as big but faster", []Entry{entry(bench.ModeManaged, none, levers.FP32, 100, time.Second), entry(bench.ModeManaged, none, levers.BF16, 100, time.Second/2)},
			"managed|managed, bf16"},
		{"recompute that saves nothing over bf16 alone",
			[]Entry{entry(bench.ModeCUDA, none, levers.FP32, 100, 0), entry(bench.ModeCUDA, none, levers.BF16, 50, 0), entry(bench.ModeCUDA, blocks, levers.BF16, 50, 0)},
			"cuda|cuda, bf16"},
		// bf16 halves the host's copies: its fp32 twin, as large on the
		// device, does not fit the host and has no prediction.
		{"16 bits that make it fit", []Entry{entry(bench.ModeManaged, none, levers.FP32, 100, 0), fits(entry(bench.ModeManaged, none, levers.BF16, 100, time.Second))},
			"managed|managed, bf16"},
		{"both levers saving", []Entry{entry(bench.ModeCUDA, none, levers.FP32, 100, 0), entry(bench.ModeCUDA, blocks, levers.FP32, 80, 0),
			entry(bench.ModeCUDA, none, levers.BF16, 50, 0), entry(bench.ModeCUDA, blocks, levers.BF16, 40, 0)},
			"cuda|cuda, recompute blocks|cuda, bf16|cuda, recompute blocks, bf16"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var names []string
			for _, e := range dropUselessLevers(tt.in) {
				names = append(names, e.Candidate.String())
			}
			if got := strings.Join(names, "|"); got != tt.want {
				t.Errorf("kept %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHasLevers: a candidate sets a lever when it recomputes or stores
// in 16 bits; "" and the defaults are none.
func TestHasLevers(t *testing.T) {
	for _, tt := range []struct {
		cfg  bench.Config
		want bool
	}{
		{bench.Config{}, false},
		{bench.Config{Set: levers.Set{Recompute: levers.RecomputeNone, Precision: levers.FP32}}, false},
		{bench.Config{Set: levers.Set{Recompute: levers.RecomputeBlocks}}, true},
		{bench.Config{Set: levers.Set{Precision: levers.BF16}}, true},
		{bench.Config{Set: levers.Set{Precision: levers.FP16}}, true},
	} {
		if got := (Candidate{Mode: bench.ModeCPU, Config: tt.cfg}).HasLevers(); got != tt.want {
			t.Errorf("%+v: HasLevers %v, want %v", tt.cfg, got, tt.want)
		}
	}
}

// TestOptionsValidate checks the margin and the take a search refuses,
// for callers of the package (the command refuses a NaN flag first, so
// its test cannot see this check: issue 44 item 26, a NaN margin
// accepted here passed every test).
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		margin  float64
		take    int64
		wantErr string // "" when valid
	}{
		{"no margin", 0, 0, ""},
		{"the default", DefaultMarginPercent, 0, ""},
		{"just under 100", 99.99, 0, ""},
		{"100", 100, 0, "got 100"},
		{"negative", -1, 0, "got -1"},
		{"NaN", math.NaN(), 0, "got NaN"},
		{"infinite", math.Inf(1), 0, "got +Inf"},
		{"minus infinity", math.Inf(-1), 0, "got -Inf"},
		{"negative take", 5, -1, "negative take -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Options{MarginPercent: tc.margin, TakeBytes: tc.take}.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
