package cache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// chain is the run of a chain of n blocks, each step needing one block:
// a forward pass F0…F(n-1) and, when training, a backward pass
// B(n-1)…B0 with each block's update right after its backward step.
func chain(n int, train bool) Run {
	run := Run{Blocks: n}
	for b := range n {
		run.Steps = append(run.Steps, Step{Needs: []int{b}})
		run.Order[0] = append(run.Order[0], b)
	}
	if train {
		for b := n - 1; b >= 0; b-- {
			run.Updates = append(run.Updates, Update{Block: b, After: len(run.Steps)})
			run.Steps = append(run.Steps, Step{Needs: []int{b}, Backward: true})
			run.Order[1] = append(run.Order[1], b)
		}
	}
	return run
}

// recorder is a Mover that writes each decision into a trace, and checks
// the invariants every policy keeps: a block is loaded only into a free
// slot and only when paged out, and a block changed by an update on the
// device is never let go without being written back.
type recorder struct {
	t      *testing.T
	events []string
	// protect lists the blocks the next step needs while the cache acts
	// after a step: evicting one of them would only load it again.
	protect []int
	slotOf  map[int]int
	slots   []int
	changed map[int]bool
}

func newRecorder(t *testing.T, window int) *recorder {
	return &recorder{t: t, slotOf: map[int]int{}, slots: slices.Repeat([]int{-1}, window), changed: map[int]bool{}}
}

func (r *recorder) Load(b, slot int, ahead bool) error {
	if _, ok := r.slotOf[b]; ok {
		r.t.Errorf("block %d loaded while resident", b)
	}
	if r.slots[slot] >= 0 {
		r.t.Errorf("block %d loaded into slot %d, which holds block %d", b, slot, r.slots[slot])
	}
	r.slotOf[b], r.slots[slot] = slot, b
	e := fmt.Sprintf("load %d@%d", b, slot)
	if ahead {
		e += " ahead"
	}
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) Evict(b int, writeBack bool) error {
	slot, ok := r.slotOf[b]
	if !ok {
		r.t.Errorf("block %d evicted while paged out", b)
	}
	if slices.Contains(r.protect, b) {
		r.t.Errorf("block %d, which the next step needs, evicted after the step before it", b)
	}
	if r.changed[b] && !writeBack {
		r.t.Errorf("block %d changed on the device and evicted without write-back: its update is lost", b)
	}
	delete(r.slotOf, b)
	delete(r.changed, b)
	r.slots[slot] = -1
	e := fmt.Sprintf("evict %d", b)
	if writeBack {
		e += " wb"
	}
	r.events = append(r.events, e)
	return nil
}

// drive runs runs Runs of run through a cache of cfg as the engine's walk
// does (Before each step, then each update that follows it: Drop with the
// optimizer on the host, else Update; then After) and returns the trace:
// one line per phase that moved a block, "F2: …" before forward step 2,
// "B1: …" before backward step 1 (steps named by the block they need),
// "U1: …" at block 1's update, "+F2: …" after step F2; "--" between Runs.
func drive(t *testing.T, cfg Config, run Run, window, runs int) []string {
	t.Helper()
	r := newRecorder(t, window)
	c, err := New(cfg, run, window, r)
	if err != nil {
		t.Fatal(err)
	}
	var trace []string
	phase := func(name string, do func() error) {
		r.events = nil
		if err := do(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(r.events) > 0 {
			trace = append(trace, name+": "+strings.Join(r.events, ", "))
		}
	}
	for i := range runs {
		if i > 0 {
			trace = append(trace, "--")
		}
		for si, s := range run.Steps {
			name := fmt.Sprintf("F%d", s.Needs)
			if s.Backward {
				name = fmt.Sprintf("B%d", s.Needs)
			}
			if len(s.Needs) == 1 {
				name = name[:1] + strings.Trim(name[1:], "[]")
			}
			phase(name, func() error { return c.Before(si) })
			for _, b := range s.Writes {
				r.changed[b] = true
			}
			for _, b := range s.Needs {
				if !c.Resident(b) {
					t.Fatalf("%s: block %d not resident", name, b)
				}
			}
			for _, u := range run.Updates {
				if u.After != si {
					continue
				}
				if cfg.OptimizerOnHost {
					phase(fmt.Sprintf("U%d", u.Block), func() error { return c.Drop(u.Block) })
					continue
				}
				phase(fmt.Sprintf("U%d", u.Block), func() error { return c.Update(u.Block, si) })
				r.changed[u.Block] = true
			}
			if si+1 < len(run.Steps) {
				r.protect = run.Steps[si+1].Needs
			}
			phase("+"+name, func() error { return c.After(si) })
			r.protect = nil
		}
	}
	return trace
}

// traceCase is a run driven through a policy and the trace it must give.
type traceCase struct {
	name   string
	cfg    Config
	run    Run
	window int
	runs   int
	want   []string
}

// The traces below (and tiedCases, tied_test.go) are derived by hand,
// step by step, from each policy's rule; each case's comment gives the
// derivation.
var traceCases = []traceCase{
	{
		// Eval, a chain of 3 in a window of 2. Run 1 knows no order: each
		// miss writes the window back and loads the missed block alone,
		// learning forward 0→1→2. Run 2: the miss on 0 writes back 2 and
		// loads 0 with its learned successor 1; F0 learns 2→0 (a forward
		// pass never resets the chain); the miss on 2 writes back the
		// whole window (0 and 1, unchanged in eval and written back all
		// the same, as DictCache's .to(cpu) does) and loads 2 with its
		// successor 0. Run 3: 0 hits; the miss on 1 writes back 2 and 0
		// and loads 1 with 2; F2 hits.
		name: "window learns the order, writes the whole window back", cfg: Config{Policy: Window, Window: 2},
		run: chain(3, false), window: 2, runs: 3,
		want: []string{
			"F0: load 0@0", "F1: evict 0 wb, load 1@0", "F2: evict 1 wb, load 2@0",
			"--",
			"F0: evict 2 wb, load 0@0, load 1@1", "F2: evict 0 wb, evict 1 wb, load 2@0, load 0@1",
			"--",
			"F1: evict 2 wb, evict 0 wb, load 1@0, load 2@1",
		},
	},
	{
		// Auto, eval, the chain of 3 of the case below, whose step 1
		// writes block 1's state (a key-value cache): the same decisions
		// (the policy's choices do not depend on what changed), but block
		// 1, evicted once after F1, is written back.
		name: "auto writes back a block whose state a step wrote", cfg: Config{Policy: Auto, Window: 2},
		run: writing(chain(3, false), 1), window: 2, runs: 4,
		want: []string{
			"F0: load 0@0", "+F0: load 1@1 ahead", "+F1: evict 1 wb, load 2@1 ahead",
			"--",
			"+F0: evict 0, load 1@0 ahead",
			"--",
			"F0: evict 2, load 0@1", "+F0: evict 0, load 2@1 ahead",
			"--",
			"F0: evict 2, load 0@1", "+F0: evict 0, load 2@1 ahead",
		},
	},
	{
		// Train, a chain of 3 in a window of 2. Run 1 learns forward 0→1
		// and 1→2 as the eval case; the backward pass starts a new chain
		// at B2 (hit, so it learns nothing) and learns backward 2→1 at
		// B1 and 1→0 at B0, each a miss that loads the missed block
		// alone. Run 2: F0 hits (left by B0); the miss on 1 writes back 0
		// and loads 1 with its successor 2; F2, B2, B1 hit; the miss on 0
		// writes back the window (1 and 2) and loads 0 alone (0 has no
		// backward successor). Updates always find their block resident.
		name: "window in training", cfg: Config{Policy: Window, Window: 2},
		run: chain(3, true), window: 2, runs: 2,
		want: []string{
			"F0: load 0@0", "F1: evict 0 wb, load 1@0", "F2: evict 1 wb, load 2@0",
			"B1: evict 2 wb, load 1@0", "B0: evict 1 wb, load 0@0",
			"--",
			"F1: evict 0 wb, load 1@0, load 2@1", "B0: evict 1 wb, evict 2 wb, load 0@0",
		},
	},
	{
		// Window-paged knows each pass's order from the schedule, from
		// the first Run on: the miss on 0 loads 0 and 1; the miss on 2
		// writes back both and loads 2 (the last of the forward order);
		// the miss on 1 in the backward pass writes back 2 and loads 1
		// and 0. Run 2 finds 1 and 0 resident and repeats the rest: 3
		// loads and 3 write-backs per Run from the first.
		name: "window-paged follows the known order", cfg: Config{Policy: WindowPaged, Window: 2},
		run: chain(3, true), window: 2, runs: 2,
		want: []string{
			"F0: load 0@0, load 1@1", "F2: evict 0 wb, evict 1 wb, load 2@0", "B1: evict 2 wb, load 1@0, load 0@1",
			"--",
			"F2: evict 1 wb, evict 0 wb, load 2@0", "B1: evict 2 wb, load 1@0, load 0@1",
		},
	},
	{
		// Auto, eval, a chain of 3 in a window of 2 (block b needed at
		// step b only; a block not needed again in this Run is next
		// needed in the next). Run 1: F0 misses into slot 0; after F0, 1
		// goes ahead into the free slot 1; after F1, 2 is needed next and
		// the resident block needed farthest ahead is 1 (step 1 of the
		// next Run, after 0 at its step 0): dropped, unchanged, without
		// write-back, for 2. Run 2: F0 hits; after F0, 1 is needed next
		// and 0 is needed farther than 2: 0 makes room. Run 3: F0 misses
		// (prefetch looks within a Run only) and evicts 2 (needed after
		// 1); after F0, 2 is needed after 1, which stays (the next
		// step's block is never evicted): 0 makes room. Run 4 = Run 3.
		name: "auto prefetches and drops unchanged blocks", cfg: Config{Policy: Auto, Window: 2},
		run: chain(3, false), window: 2, runs: 4,
		want: []string{
			"F0: load 0@0", "+F0: load 1@1 ahead", "+F1: evict 1, load 2@1 ahead",
			"--",
			"+F0: evict 0, load 1@0 ahead",
			"--",
			"F0: evict 2, load 0@1", "+F0: evict 0, load 2@1 ahead",
			"--",
			"F0: evict 2, load 0@1", "+F0: evict 0, load 2@1 ahead",
		},
	},
	{
		// Auto, train, a chain of 3 in a window of 2 (block b's uses: F b
		// and B b). Run 1: F0 misses; 1 goes ahead into slot 1; after F1,
		// 0 (next needed at B0, step 5) is farther than 1 (B1, step 4):
		// 0 is dropped, unchanged, for 2. After F2 and B2 the coming need
		// is 0 at B0, and the only candidate, 1, is needed before it at
		// B1: nothing moves. After U2 (2 changed), 2 is not needed again
		// this Run: written back and replaced by 0 ahead of B0. Run 2:
		// after F0, 2 replaces 0, now changed: written back. After U2,
		// as in Run 1. Block 1 never moves.
		name: "auto writes back changed blocks only", cfg: Config{Policy: Auto, Window: 2},
		run: chain(3, true), window: 2, runs: 2,
		want: []string{
			"F0: load 0@0", "+F0: load 1@1 ahead", "+F1: evict 0, load 2@0 ahead", "+B2: evict 2 wb, load 0@0 ahead",
			"--",
			"+F0: evict 0 wb, load 2@0 ahead", "+B2: evict 2 wb, load 0@0 ahead",
		},
	},
	{
		// Auto with the optimizer on the host: each update drops the
		// block's device copy (the host master is newer), never written
		// back. Run 1: F0 misses, 1 ahead, 2 ahead in place of 0 (as
		// above); U2 drops 2, freeing slot 0, so after B2 0 goes ahead
		// into it; U1 drops 1 (slot 1 free); U0 drops 0. Run 2 starts
		// empty: as Run 1.
		name: "auto with the optimizer on the host drops updated blocks", cfg: Config{Policy: Auto, Window: 2, OptimizerOnHost: true},
		run: chain(3, true), window: 2, runs: 2,
		want: []string{
			"F0: load 0@0", "+F0: load 1@1 ahead", "+F1: evict 0, load 2@0 ahead", "U2: evict 2", "+B2: load 0@0 ahead",
			"U1: evict 1", "U0: evict 0",
			"--",
			"F0: load 0@0", "+F0: load 1@1 ahead", "+F1: evict 0, load 2@0 ahead", "U2: evict 2", "+B2: load 0@0 ahead",
			"U1: evict 1", "U0: evict 0",
		},
	},
	{
		// Window, train, a chain of 3 in a window of 1 whose blocks 0 and
		// 2 are read-only (every parameter frozen, as LoRA leaves the
		// embedding and the head): only block 1 is updated (after B1).
		// Each miss writes the window back and loads the missed block
		// alone (a window of 1 takes no successor), as in the cases
		// above, but a read-only block is let go without write-back: of
		// the 5 evictions of a Run only block 1's 2 write back, where
		// every block trained writes back all 5. Run 2 starts with 0
		// resident (left by B0).
		name: "window never writes a read-only block back", cfg: Config{Policy: Window, Window: 1},
		run: readOnlyChain(3, 0, 2), window: 1, runs: 2,
		want: []string{
			"F0: load 0@0", "F1: evict 0, load 1@0", "F2: evict 1 wb, load 2@0", "B1: evict 2, load 1@0", "B0: evict 1 wb, load 0@0",
			"--",
			"F1: evict 0, load 1@0", "F2: evict 1 wb, load 2@0", "B1: evict 2, load 1@0", "B0: evict 1 wb, load 0@0",
		},
	},
	{
		// Auto, the same run in a window of 2: a block is written back
		// only if it changed, so read-only blocks never are, as without
		// the mark. Run 1: F0 misses; 1 ahead; after F1, 0 (next needed
		// at B0, step 5) is farther than 1 (B1, step 4): dropped for 2.
		// After B2 the coming need is 0 at B0 (1 is resident for B1), and
		// 2, with no update to wait for, is not needed again this Run:
		// dropped for 0, one step earlier than a trained block 2 could
		// be (after its update). Run 2: after F0, 1 is resident; 2 (F2)
		// is nearer than 0 (B0): 0 is dropped for it; after B2, as in
		// Run 1.
		name: "auto with read-only blocks", cfg: Config{Policy: Auto, Window: 2},
		run: readOnlyChain(3, 0, 2), window: 2, runs: 2,
		want: []string{
			"F0: load 0@0", "+F0: load 1@1 ahead", "+F1: evict 0, load 2@0 ahead", "+B2: evict 2, load 0@0 ahead",
			"--",
			"+F0: evict 0, load 2@0 ahead", "+B2: evict 2, load 0@0 ahead",
		},
	},
}

// writing is run with each forward step that needs one of blocks writing
// its state.
func writing(run Run, blocks ...int) Run {
	for si, st := range run.Steps {
		if !st.Backward && slices.Contains(blocks, st.Needs[0]) {
			run.Steps[si].Writes = st.Needs[:1]
		}
	}
	return run
}

// TestWritesChecked checks that a step writing a block it does not need,
// or a read-only block, is refused.
func TestWritesChecked(t *testing.T) {
	run := chain(3, false)
	run.Steps[0].Writes = []int{1}
	if _, err := New(Config{Policy: Auto, Window: 1}, run, 1, newRecorder(t, 1)); err == nil {
		t.Error("a step writing a block it does not need accepted")
	}
	run = writing(chain(3, false), 1)
	run.ReadOnly = []bool{false, true, false}
	if _, err := New(Config{Policy: Auto, Window: 1}, run, 1, newRecorder(t, 1)); err == nil {
		t.Error("a step writing a read-only block accepted")
	}
}

// readOnlyChain is chain(n, true) with the blocks readOnly lists marked
// read-only and their updates left out.
func readOnlyChain(n int, readOnly ...int) Run {
	run := chain(n, true)
	run.ReadOnly = make([]bool, n)
	for _, b := range readOnly {
		run.ReadOnly[b] = true
	}
	run.Updates = slices.DeleteFunc(run.Updates, func(u Update) bool { return run.ReadOnly[u.Block] })
	return run
}

// TestReadOnlyUpdated checks that a read-only block with an update is
// refused: its update's write-back would be lost.
func TestReadOnlyUpdated(t *testing.T) {
	run := chain(3, true)
	run.ReadOnly = []bool{false, true, false}
	if _, err := New(Config{Policy: Window, Window: 1}, run, 1, newRecorder(t, 1)); err == nil {
		t.Error("a read-only block's update accepted")
	}
}

func TestTraces(t *testing.T) {
	for _, tc := range slices.Concat(traceCases, tiedCases) {
		t.Run(tc.name, func(t *testing.T) {
			got := drive(t, tc.cfg, tc.run, tc.window, tc.runs)
			if !slices.Equal(got, tc.want) {
				t.Errorf("trace:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}

// randomRun returns a run of up to 6 blocks whose steps need one or two
// blocks at random, with an update of each block after its last backward
// step when training.
func randomRun(rng *rand.Rand, train bool) Run {
	n := 1 + rng.IntN(6)
	run := Run{Blocks: n}
	seen := [2]map[int]bool{{}, {}}
	add := func(backward bool) {
		needs := []int{rng.IntN(n)}
		if b := rng.IntN(n); rng.IntN(3) == 0 && b != needs[0] {
			needs = append(needs, b)
		}
		run.Steps = append(run.Steps, Step{Needs: needs, Backward: backward})
		if !train && rng.IntN(3) == 0 { // a state written, as generation's caches are
			run.Steps[len(run.Steps)-1].Writes = needs[:1]
		}
		for _, b := range needs {
			if p := pass(backward); !seen[p][b] {
				seen[p][b] = true
				run.Order[p] = append(run.Order[p], b)
			}
		}
	}
	for range 1 + rng.IntN(8) {
		add(false)
	}
	if train {
		for range 1 + rng.IntN(8) {
			add(true)
		}
		for b := range n {
			last := -1
			for si, s := range run.Steps {
				if s.Backward && slices.Contains(s.Needs, b) {
					last = si
				}
			}
			if last >= 0 {
				run.Updates = append(run.Updates, Update{Block: b, After: last})
			}
		}
		slices.SortStableFunc(run.Updates, func(a, b Update) int { return a.After - b.After })
	}
	return run
}

// TestInvariants drives every policy over random runs and windows: every
// step finds its blocks resident, a block is loaded only into a free slot,
// no update on the device is lost by an eviction without write-back, and
// nothing the next step needs is evicted after the step before it (the
// recorder and drive check each).
func TestInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		train := i%2 == 0
		run := randomRun(rng, train)
		for _, cfg := range Choices(1, train) {
			window := run.MinWindow() + rng.IntN(run.Blocks)
			cfg.Window = max(cfg.Window, min(window, 1+rng.IntN(run.Blocks)))
			window = min(max(window, cfg.Window), run.Blocks)
			window = max(window, run.MinWindow())
			t.Run(fmt.Sprintf("%d/%s-%d-host=%v", i, cfg.Policy, window, cfg.OptimizerOnHost), func(t *testing.T) {
				drive(t, cfg, run, window, 3)
				if t.Failed() {
					t.Logf("run %+v", run)
				}
			})
		}
	}
}

// TestChoices: a plan compares every policy at the window given, the
// auto policy sizing its own; with no window given (0) only the policies
// that size their window are planned, a window policy having none.
func TestChoices(t *testing.T) {
	for _, tt := range []struct {
		window int
		train  bool
		want   []Config
	}{
		{3, false, []Config{{Policy: Window, Window: 3}, {Policy: WindowPaged, Window: 3}, {Policy: Auto}}},
		{3, true, []Config{{Policy: Window, Window: 3}, {Policy: WindowPaged, Window: 3}, {Policy: Auto}, {Policy: Auto, OptimizerOnHost: true}}},
		{0, true, []Config{{Policy: Auto}, {Policy: Auto, OptimizerOnHost: true}}},
	} {
		if got := Choices(tt.window, tt.train); !slices.Equal(got, tt.want) {
			t.Errorf("Choices(%d, %v) = %+v, want %+v", tt.window, tt.train, got, tt.want)
		}
	}
}

// pageLog is a PageMover that records each migration.
type pageLog []string

func (l *pageLog) MigrateIn(page int) error { *l = append(*l, fmt.Sprintf("in %d", page)); return nil }
func (l *pageLog) MigrateOut(page int) error {
	*l = append(*l, fmt.Sprintf("out %d", page))
	return nil
}

// TestPagesLRU pins the managed mode's page residency on a device of 2
// pages: touching 0-1 migrates both in (1 the most recent); touching 2
// evicts 0, the least recently touched; touching 1 again migrates nothing
// and makes it the most recent, so touching 0 evicts 2, not 1; touching
// 3-4 evicts 1 for 3, then 0 for 4. A sweep of 3 pages over 2 slots
// (0-2 twice) faults on every page: LRU's known worst case.
func TestPagesLRU(t *testing.T) {
	for _, tc := range []struct {
		name    string
		touches [][2]int
		want    []string
	}{
		{"least recently touched first", [][2]int{{0, 1}, {2, 2}, {1, 1}, {0, 0}, {3, 4}},
			[]string{"in 0", "in 1", "out 0", "in 2", "out 2", "in 0", "out 1", "in 3", "out 0", "in 4"}},
		{"a sweep larger than the device", [][2]int{{0, 2}, {0, 2}},
			[]string{"in 0", "in 1", "out 0", "in 2", "out 1", "in 0", "out 2", "in 1", "out 0", "in 2"}},
		{"a resident page migrates nothing", [][2]int{{0, 1}, {0, 1}, {1, 0}},
			[]string{"in 0", "in 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log pageLog
			p, err := NewPages(2, &log)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.touches {
				if err := p.Touch(r[0], r[1]); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(log, tc.want) {
				t.Errorf("migrations:\n got  %q\n want %q", log, tc.want)
			}
			if p.Resident() > 2 {
				t.Errorf("%d pages resident on a device of 2", p.Resident())
			}
		})
	}
	if _, err := NewPages(0, new(pageLog)); err == nil {
		t.Error("a device of 0 pages accepted")
	}
}

// TestPagesPreferHost: with pages from 2 on preferred on the host, a
// device of 2 pages takes 0 and 1 at their first touch and keeps them;
// touching 0-4 again and again migrates nothing more, and pages 2-4 are
// remote.
func TestPagesPreferHost(t *testing.T) {
	var log pageLog
	p, err := NewPages(2, &log)
	if err != nil {
		t.Fatal(err)
	}
	p.PreferHost(2)
	for range 3 {
		if err := p.Touch(0, 4); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"in 0", "in 1"}; !slices.Equal(log, want) {
		t.Errorf("migrations %q, want %q", log, want)
	}
	for page, remote := range []bool{false, false, true, true, true} {
		if p.Remote(page) != remote {
			t.Errorf("page %d remote %v, want %v", page, p.Remote(page), remote)
		}
	}
}
