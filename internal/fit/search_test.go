package fit

import (
	"strings"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
)

// TestCandidates counts the search's candidates and checks its pruning:
// for b blocks of which a step needs m, the cpu, cuda, each of the three
// policies' windows m…b (the auto policy's twice when training, the
// optimizer on the host too), 2(b-1) hybrid splits and two managed
// placements; times two recompute settings when training. Without a
// device, the cpu alone.
func TestCandidates(t *testing.T) {
	check := func(name string, blocks, minWindow int, train, gpu bool, want int) {
		t.Run(name, func(t *testing.T) {
			cs := Candidates(blocks, minWindow, train, gpu)
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
				if c.Mode == bench.ModeCache && (c.Cache.Window < minWindow || c.Cache.Window > blocks) {
					t.Errorf("%s: window outside %d…%d", key, minWindow, blocks)
				}
				if c.Recompute.On() && !train {
					t.Errorf("%s: recompute when evaluating", key)
				}
			}
		})
	}
	check("3 blocks, train", 3, 1, true, true, 2*(1+1+3*4+4+2))
	check("3 blocks, eval", 3, 1, false, true, 1+1+3*3+4+2)
	check("12 blocks, train", 12, 1, true, true, 2*(1+1+12*4+22+2))
	check("12 blocks of which a step needs 2, eval", 12, 2, false, true, 1+1+11*3+22+2)
	check("no device, train", 12, 1, true, false, 2)
	check("no device, eval", 12, 1, false, false, 1)
}

// TestSplits lists the hybrid placements of three blocks: one boundary
// each, the host first and then the device first.
func TestSplits(t *testing.T) {
	var got []string
	for _, s := range splits(3) {
		got = append(got, engine.PlaceText(s))
	}
	want := "host:0,cuda:1-2 host:0-1,cuda:2 cuda:0,host:1-2 cuda:0-1,host:2"
	if strings.Join(got, " ") != want {
		t.Errorf("splits(3) = %v, want %s", got, want)
	}
}

// TestDropUselessLevers keeps a recompute candidate only where it needs
// less device memory than the same candidate without it.
func TestDropUselessLevers(t *testing.T) {
	entry := func(mode bench.Mode, r levers.Recompute, need int64) Entry {
		e := Entry{Candidate: Candidate{Mode: mode, Config: bench.Config{Recompute: r}}}
		e.Plan.Footprint.Device = need
		return e
	}
	got := dropUselessLevers([]Entry{
		entry(bench.ModeCUDA, levers.RecomputeNone, 100), entry(bench.ModeCUDA, levers.RecomputeBlocks, 60),
		entry(bench.ModeManaged, levers.RecomputeNone, 100), entry(bench.ModeManaged, levers.RecomputeBlocks, 100),
	})
	var names []string
	for _, e := range got {
		names = append(names, e.Candidate.String())
	}
	if want := "cuda|cuda, recompute blocks|managed"; strings.Join(names, "|") != want {
		t.Errorf("kept %q, want %q", strings.Join(names, "|"), want)
	}
}
