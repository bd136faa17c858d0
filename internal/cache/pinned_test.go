package cache

import (
	"slices"
	"strings"
	"testing"
)

// TestMissKeepsTheStepsNeeds: a miss never evicts a block the step itself
// needs, even when every resident block is needed as soon. Blocks 0 and 1
// are resident (step 0 needs both) and step 1 needs 0 and 2, while block
// 1's update follows step 1: blocks 0 and 1 are both next needed at step
// 1, a tie. The miss on 2 must evict 1 (reloaded for its update), never 0,
// which step 1 reads; evicting 0 leaves step 1 without it (drive fails).
// At U1, step 1 has run: 0 and 2 are both done with, a tie, and the first
// slot's block goes.
func TestMissKeepsTheStepsNeeds(t *testing.T) {
	run := Run{Blocks: 3,
		Steps:   []Step{{Needs: []int{0, 1}, Backward: true}, {Needs: []int{0, 2}, Backward: true}},
		Updates: []Update{{Block: 1, After: 1}},
		Order:   [2][]int{1: {0, 1, 2}}}
	got := drive(t, Config{Policy: Auto, Window: 2}, run, 2, 1)
	want := []string{"B[0 1]: load 0@0, load 1@1", "B[0 2]: evict 1, load 2@1", "U1: evict 0, load 1@0"}
	if !slices.Equal(got, want) {
		t.Errorf("trace:\n got  %q\n want %q", got, want)
	}
}

// TestAheadKeepsComingNeeds: the auto policy's prefetch (After) loads the
// next block a coming step needs only in place of a block needed later
// than that step, never one the next step or the step it loads for
// reads. Each case is a window of 2 after step 0 of a one-block-per-step
// run (or, where named, two blocks a step) and the loads and evictions
// After(0) makes.
func TestAheadKeepsComingNeeds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps [][]int // the blocks each step needs
		want  string  // what After(0) does
	}{
		// 0 and 1 resident; step 1 needs 1, step 2 needs 2 and then 0
		// again at step 3: 0 (step 3) is needed after 2 (step 2), so 0
		// makes room.
		{"evicts the block needed after the one it loads", [][]int{{0, 1}, {1}, {2}, {0}}, "evict 0, load 2@0 ahead"},
		// Step 1 needs 1 and 0 both: nothing resident may go for 2.
		{"keeps the next step's blocks", [][]int{{0, 1}, {1, 0}, {2}}, ""},
		// Step 1 needs 1; step 2 needs 2 and 0: 0 is needed by the step
		// 2 is loaded for, so evicting it gains nothing.
		{"keeps the blocks of the step it loads for", [][]int{{0, 1}, {1}, {2, 0}}, ""},
		// Step 1 needs 1, step 2 needs 0, step 3 needs 2: 0 is needed
		// before 2, so the prefetch waits.
		{"waits while everything resident is needed sooner", [][]int{{0, 1}, {1}, {0}, {2}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := Run{Blocks: 3}
			for _, needs := range tc.steps {
				run.Steps = append(run.Steps, Step{Needs: needs})
			}
			r := newRecorder(t, 2)
			c, err := New(Config{Policy: Auto, Window: 2}, run, 2, r)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Before(0); err != nil {
				t.Fatal(err)
			}
			r.events = nil
			if err := c.After(0); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(r.events, ", "); got != tc.want {
				t.Errorf("after step 0: %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWindowResetsAtBackward: DictCache's window starts a new chain at
// the backward pass, so the block the forward pass ended on does not
// learn the backward pass's first block as its backward successor.
// Forward 0 1 2, backward 1 0 2, a window of 2, no updates. Step by step:
//
//	Run 1 knows no order: each miss writes the window back and loads the
//	missed block alone (F0, F1, F2, B1, B0, B2), learning forward 0→1→2
//	and backward 1→0→2.
//	Run 2: F0 misses: 2 written back, 0 loaded with its forward
//	successor 1. F1 hits. F2 misses: 0 and 1 written back, 2 loaded with
//	its forward successor 0 (learned when run 2's F0 followed run 1's
//	B2: a forward pass does not reset the chain). B1 misses: 2 and 0
//	written back, 1 loaded with its backward successor 0. B0 hits. B2
//	misses: 1 and 0 written back and 2 loaded alone, as 2 has no
//	backward successor.
//
// Without the reset, the forward pass's last block 2 learns 1 (the
// backward pass's first) as its backward successor, and B2 loads 1 too.
func TestWindowResetsAtBackward(t *testing.T) {
	run := Run{Blocks: 3}
	for _, b := range []int{0, 1, 2} {
		run.Steps = append(run.Steps, Step{Needs: []int{b}})
	}
	for _, b := range []int{1, 0, 2} {
		run.Steps = append(run.Steps, Step{Needs: []int{b}, Backward: true})
	}
	run.Order = [2][]int{{0, 1, 2}, {1, 0, 2}}
	got := drive(t, Config{Policy: Window, Window: 2}, run, 2, 2)
	want := []string{
		"F0: load 0@0", "F1: evict 0 wb, load 1@0", "F2: evict 1 wb, load 2@0",
		"B1: evict 2 wb, load 1@0", "B0: evict 1 wb, load 0@0", "B2: evict 0 wb, load 2@0",
		"--",
		"F0: evict 2 wb, load 0@0, load 1@1", "F2: evict 0 wb, evict 1 wb, load 2@0, load 0@1",
		"B1: evict 2 wb, evict 0 wb, load 1@0, load 0@1", "B2: evict 1 wb, evict 0 wb, load 2@0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("trace:\n got  %q\n want %q", got, want)
	}
}

// TestValidate: the configurations no policy can apply are refused, each
// with its reason, and the others pass.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string // a part of the error, "" for none
	}{
		{Config{Policy: Auto}, ""},
		{Config{Policy: Auto, Window: 3, OptimizerOnHost: true}, ""},
		{Config{Policy: Window, Window: 1}, ""},
		{Config{Policy: WindowPaged, Window: 4}, ""},
		{Config{Policy: "lru", Window: 1}, `unknown cache policy "lru" (want window, window-paged, auto)`},
		{Config{Policy: Auto, Window: -1}, "negative window -1"},
		{Config{Policy: Window, Window: -2}, "negative window -2"},
		{Config{Policy: Window}, "the window must hold at least one block"},
		{Config{Policy: WindowPaged}, "the window must hold at least one block"},
		{Config{Policy: Window, Window: 2, OptimizerOnHost: true}, "the host optimizer is an auto-policy option"},
		{Config{Policy: WindowPaged, Window: 2, OptimizerOnHost: true}, "the host optimizer is an auto-policy option"},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one saying %q", tc.cfg, err, tc.want)
		}
	}
}

// TestCheckPageSize: a page is a power of two of at least 4 KiB.
func TestCheckPageSize(t *testing.T) {
	for _, tc := range []struct {
		bytes int64
		ok    bool
	}{
		{4 << 10, true}, {8 << 10, true}, {2 << 20, true}, {1 << 30, true},
		{0, false}, {-4096, false}, {2 << 10, false}, {3 << 10, false},
		{6 << 10, false}, {12 << 10, false}, {3 << 20, false}, {(2 << 20) + 4096, false},
	} {
		if err := CheckPageSize(tc.bytes); (err == nil) != tc.ok {
			t.Errorf("CheckPageSize(%d) = %v, want ok %v", tc.bytes, err, tc.ok)
		}
	}
}

// TestSlots: the window a cache keeps. A policy that sizes its window
// (auto, window 0) takes as many slots as free memory holds beyond the
// fixed bytes, at least one; a given window is taken as is; both are
// raised to the most blocks one step needs and capped at the blocks
// paged.
func TestSlots(t *testing.T) {
	for _, tc := range []struct {
		name               string
		cfg                Config
		free, fixed, slot  int64
		least, most, slots int
	}{
		{"auto from free memory beyond the fixed bytes", Config{Policy: Auto}, 1000, 300, 100, 1, 20, 7},
		{"auto rounds down", Config{Policy: Auto}, 1000, 301, 100, 1, 20, 6},
		{"auto with nothing free beyond the fixed takes one", Config{Policy: Auto}, 300, 300, 100, 1, 20, 1},
		{"auto with less free than fixed takes one", Config{Policy: Auto}, 200, 300, 100, 1, 20, 1},
		{"auto raised to a step's need", Config{Policy: Auto}, 400, 300, 100, 3, 20, 3},
		{"auto capped at the blocks paged", Config{Policy: Auto}, 1 << 40, 0, 100, 1, 5, 5},
		{"auto with a given window ignores memory", Config{Policy: Auto, Window: 2}, 1 << 40, 0, 100, 1, 20, 2},
		{"window as given", Config{Policy: Window, Window: 4}, 0, 0, 100, 1, 20, 4},
		{"window raised to a step's need", Config{Policy: Window, Window: 1}, 0, 0, 100, 2, 20, 2},
		{"window capped at the blocks paged", Config{Policy: WindowPaged, Window: 9}, 0, 0, 100, 1, 3, 3},
	} {
		perSlot := func(w int) int64 { return int64(w) * tc.slot }
		if got := tc.cfg.Slots(tc.free, tc.fixed, perSlot, tc.least, tc.most); got != tc.slots {
			t.Errorf("%s: %d slots, want %d", tc.name, got, tc.slots)
		}
	}
}
