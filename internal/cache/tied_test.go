package cache

// tied is the run of a decoder whose input embedding and output head share
// one weight (tied embeddings: GPT-2, SmolLM2, Llama-3.2-1B), with layers
// decoder layers. The weight belongs to block 0, the embedding, the first
// block that reads it; blocks 1…layers are the layers and block layers+1
// the final norm. The forward pass needs 0, each layer, the norm, and 0
// again for the head's product, which reads the tied weight; the backward
// pass needs 0 first (the head product's gradients), then the norm and the
// layers down to 1, each updated right after its backward step, and 0
// last (the embedding's gradient), after which block 0's one update runs
// on the sum of its two gradients. Each pass's order lists first needs:
// forward 0, 1, …, layers+1; backward 0, layers+1, …, 1.
func tied(layers int, train bool) Run {
	n := layers + 2
	run := Run{Blocks: n}
	step := func(b int, backward bool) {
		run.Steps = append(run.Steps, Step{Needs: []int{b}, Backward: backward})
	}
	for b := range n {
		step(b, false)
		run.Order[0] = append(run.Order[0], b)
	}
	step(0, false)
	if !train {
		return run
	}
	step(0, true)
	run.Order[1] = append(run.Order[1], 0)
	for b := n - 1; b >= 1; b-- {
		run.Updates = append(run.Updates, Update{Block: b, After: len(run.Steps)})
		step(b, true)
		run.Order[1] = append(run.Order[1], b)
	}
	run.Updates = append(run.Updates, Update{Block: 0, After: len(run.Steps)})
	step(0, true)
	return run
}

// tiedCases are traces over tied(1, …): blocks embed (0), layer (1) and
// norm (2), steps forward F0 F1 F2 F0 and backward B0 B2 U2 B1 U1 B0 U0
// (steps 0-3 and 4-7). Block 0's uses are steps 0, 3, 4 and 7 (its update
// follows step 7, which needs it), block 1's 1 and 6, block 2's 2 and 5.
// Each trace is derived by hand in its comment, then checked against the
// code.
var tiedCases = []traceCase{
	{
		// Window, train, window 2. Run 1, forward: each miss knows no
		// successor yet, writes the window back and loads the missed
		// block alone, learning forward 0→1 and 1→2; the head's F0
		// misses on 0, which has learned 1: 2 written back, 0 and 1
		// loaded; F0 learns 2→0. Backward: B0 hits (the pass's chain
		// starts anew at 0, learning nothing); B2 misses with no
		// backward successor: 0 and 1 written back (0 unchanged so far,
		// written back all the same), 2 loaded; it learns 0→2. U2 hits.
		// B1 misses: 2 (updated) written back, 1 loaded; learns 2→1. U1
		// hits. The second B0 misses: 0 has learned 2, so 1 (updated)
		// is written back and 0 and 2 are loaded (2 is done with for
		// this Run: DictCache's per-block successor cannot tell the two
		// needs of 0 apart); learns 1→0. U0 hits. Run 2: F0 hits; F1
		// misses, 1 has learned 2: 0 (updated) and 2 written back, 1
		// and 2 loaded, 2 copied back and in again as the whole window
		// is; F2 hits; F0 misses: 1 and 2 back, 0 and 1 in; B0 hits; B2
		// misses, 2 has learned 1: 0 and 1 back, 2 and 1 in; B1 hits;
		// B0 misses: 2 and 1 back, 0 and 2 in. Every update finds its
		// block resident and every eviction writes back.
		name: "window, a tied weight in training", cfg: Config{Policy: Window, Window: 2},
		run: tied(1, true), window: 2, runs: 2,
		want: []string{
			"F0: load 0@0", "F1: evict 0 wb, load 1@0", "F2: evict 1 wb, load 2@0", "F0: evict 2 wb, load 0@0, load 1@1",
			"B2: evict 0 wb, evict 1 wb, load 2@0", "B1: evict 2 wb, load 1@0", "B0: evict 1 wb, load 0@0, load 2@1",
			"--",
			"F1: evict 0 wb, evict 2 wb, load 1@0, load 2@1", "F0: evict 1 wb, evict 2 wb, load 0@0, load 1@1",
			"B2: evict 0 wb, evict 1 wb, load 2@0, load 1@1", "B0: evict 2 wb, evict 1 wb, load 0@0, load 2@1",
		},
	},
	{
		// Window-paged, train, window 2: a miss loads the missed block
		// and those after it in the pass's order of first needs
		// (forward 0 1 2, backward 0 2 1). Run 1: F0 loads 0 and 1; F1
		// hits; F2 writes both back and loads 2 (last of the order); the
		// head's F0 writes 2 back and loads 0 and 1 (1's next need is
		// B1, three steps on: the order cannot tell the second need of 0
		// from its first); B0 hits; B2 writes back 0 and 1 and loads 2
		// and 1; U2, B1, U1 hit; the second B0 writes back 2 and 1 (both
		// updated) and loads 0 and 2 (2 again from the order after 0's
		// first need). U0 hits. Run 2 starts with 0 and 2 resident: F0
		// hits, F1 writes back 0 (updated) and 2 and loads 1 and 2; F2
		// hits; then as Run 1 from the head's F0.
		name: "window-paged, a tied weight in training", cfg: Config{Policy: WindowPaged, Window: 2},
		run: tied(1, true), window: 2, runs: 2,
		want: []string{
			"F0: load 0@0, load 1@1", "F2: evict 0 wb, evict 1 wb, load 2@0", "F0: evict 2 wb, load 0@0, load 1@1",
			"B2: evict 0 wb, evict 1 wb, load 2@0, load 1@1", "B0: evict 2 wb, evict 1 wb, load 0@0, load 2@1",
			"--",
			"F1: evict 0 wb, evict 2 wb, load 1@0, load 2@1", "F0: evict 1 wb, evict 2 wb, load 0@0, load 1@1",
			"B2: evict 0 wb, evict 1 wb, load 2@0, load 1@1", "B0: evict 2 wb, evict 1 wb, load 0@0, load 2@1",
		},
	},
	{
		// Auto, train, window 2, the optimizer on the device (a block
		// not needed again in this Run is next needed at its first use
		// plus 8). Run 1: F0 misses into slot 0; after F0, 1 goes ahead
		// into slot 1. After F1, 2 is needed at step 2: of 0 (next at 3)
		// and 1 (next at 6), 1 is farther: dropped, unchanged, for 2.
		// After F2 the coming miss is 1 at B1 (step 6), and 0 (the next
		// step's) is kept; 2 is needed at 5, before 6: nothing moves; so
		// after the head's F0 (0 kept for B0, the next step). After B0
		// (step 4) 0's next need is step 7, later than 1's at 6: 0,
		// unchanged, makes room for 1. U2 changes 2; after B2 the coming
		// miss is 0 at step 7 and 2 is not needed again this Run: 2 is
		// written back and 0 goes ahead into its slot. U1 and U0 change
		// 1 and 0 in place. Run 2 starts with 1 and 0 resident, both
		// changed: after F0 (a hit), 2 is needed at 2 and 0 (next at 3)
		// is the only candidate besides the next step's 1: written back
		// for 2; after F1, 0 is needed at 3 and 1 (next at 6): written
		// back for 0. From F2 on as Run 1, 0 now unchanged when it makes
		// room for 1 after B0. Block 0 comes in twice a Run in steady
		// state, once for the head's product and once for its gradient
		// and update; it stays from F0 (step 3) to B0 (step 4).
		name: "auto, a tied weight in training", cfg: Config{Policy: Auto, Window: 2},
		run: tied(1, true), window: 2, runs: 2,
		want: []string{
			"F0: load 0@0", "+F0: load 1@1 ahead", "+F1: evict 1, load 2@1 ahead",
			"+B0: evict 0, load 1@0 ahead", "+B2: evict 2 wb, load 0@1 ahead",
			"--",
			"+F0: evict 0 wb, load 2@1 ahead", "+F1: evict 1 wb, load 0@0 ahead",
			"+B0: evict 0, load 1@0 ahead", "+B2: evict 2 wb, load 0@1 ahead",
		},
	},
	{
		// Auto, train, window 2, the optimizer on the host: each update
		// drops its block's device copy, unwritten. Run 1 as on the
		// device up to B2: F0 misses, 1 ahead, 1 dropped for 2 ahead
		// after F1, nothing after F2 and the head's F0, 0 dropped for 1
		// after B0. U2 drops 2, freeing slot 1, into which 0 goes ahead
		// after B2; U1 drops 1 and U0 drops 0 after their steps. Run 2
		// starts empty: as Run 1.
		name: "auto with the optimizer on the host, a tied weight", cfg: Config{Policy: Auto, Window: 2, OptimizerOnHost: true},
		run: tied(1, true), window: 2, runs: 2,
		want: []string{
			"F0: load 0@0", "+F0: load 1@1 ahead", "+F1: evict 1, load 2@1 ahead", "+B0: evict 0, load 1@0 ahead",
			"U2: evict 2", "+B2: load 0@1 ahead", "U1: evict 1", "U0: evict 0",
			"--",
			"F0: load 0@0", "+F0: load 1@1 ahead", "+F1: evict 1, load 2@1 ahead", "+B0: evict 0, load 1@0 ahead",
			"U2: evict 2", "+B2: load 0@1 ahead", "U1: evict 1", "U0: evict 0",
		},
	},
	{
		// Window, eval, window 2: F0 F1 F2 F0. Run 1 learns forward
		// 0→1 and 1→2 at misses that load the missed block alone; the
		// head's F0 misses, writes 2 back and loads 0 with 1, learning
		// 2→0. Run 2: F0 and F1 hit; F2 misses, 2 has learned 0: 0 and
		// 1 written back, 2 and 0 loaded, so the head's F0 hits. Run 3:
		// F0 hits; F1 misses, 1 has learned 2: 2 and 0 back, 1 and 2
		// in; F2 hits; F0 misses: 1 and 2 back, 0 and 1 in. Run 3 ends
		// as Run 1 did: Runs 2 and 3 alternate from here.
		name: "window, a tied weight in eval", cfg: Config{Policy: Window, Window: 2},
		run: tied(1, false), window: 2, runs: 3,
		want: []string{
			"F0: load 0@0", "F1: evict 0 wb, load 1@0", "F2: evict 1 wb, load 2@0", "F0: evict 2 wb, load 0@0, load 1@1",
			"--",
			"F2: evict 0 wb, evict 1 wb, load 2@0, load 0@1",
			"--",
			"F1: evict 2 wb, evict 0 wb, load 1@0, load 2@1", "F0: evict 1 wb, evict 2 wb, load 0@0, load 1@1",
		},
	},
	{
		// Auto, eval, window 2 (0 used at steps 0 and 3, 1 at 1, 2 at 2;
		// 4 steps a Run). Run 1: F0 misses into slot 0; 1 goes ahead
		// into slot 1; after F1, 2 is needed and 1 (next at 1+4) is
		// farther than 0 (at 3): 1 dropped for 2; 0 stays for the head.
		// Run 2 starts with 0 and 2: F0 hits; after it, 1 is needed and
		// 0 (next at 3) is farther than 2 (at 2): 0 dropped for 1; after
		// F1, 0 is needed at 3 and 1 (next at 5) makes room for it, the
		// next step's 2 kept. Run 3 = Run 2: one load of 1 and one of 0
		// a Run, nothing written back.
		name: "auto, a tied weight in eval", cfg: Config{Policy: Auto, Window: 2},
		run: tied(1, false), window: 2, runs: 3,
		want: []string{
			"F0: load 0@0", "+F0: load 1@1 ahead", "+F1: evict 1, load 2@1 ahead",
			"--",
			"+F0: evict 0, load 1@0 ahead", "+F1: evict 1, load 0@0 ahead",
			"--",
			"+F0: evict 0, load 1@0 ahead", "+F1: evict 1, load 0@0 ahead",
		},
	},
}
