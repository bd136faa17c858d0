package engine

import (
	"fmt"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/cache"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
)

// compileRecompute compiles a hand model for training with recompute r.
func compileRecompute(t *testing.T, m handModel, r levers.Recompute) *Schedule {
	return compileTrain(t, m, Spec{Recompute: r})
}

// compileTrain compiles a hand model for training with the levers of
// levers (its Recompute and Precision).
func compileTrain(t *testing.T, m handModel, levers Spec) *Schedule {
	t.Helper()
	inputs, blocks, loss := m.build()
	sc, err := Compile(Spec{Inputs: inputs, Blocks: blocks, Output: loss, Train: true, Optimizer: hostmath.DefaultAdam(), ClipNorm: 1,
		Recompute: levers.Recompute, Precision: levers.Precision})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestRecomputeKeepsBlockInputs: with recompute, a block keeps only the
// saved values its own parameters do not reach (its input), the others
// are re-run in the backward pass; without it, the linear hand model keeps
// z0 with L0, h0 and z1 with L1, h1, z2 and h2 with L2 (dictcache_test.go).
func TestRecomputeKeepsBlockInputs(t *testing.T) {
	names := func(sc *Schedule) string {
		var parts []string
		for b, blk := range sc.spec.Blocks {
			var vs []string
			for _, v := range sc.saved[b] {
				vs = append(vs, fmt.Sprint(sc.values[v].produced))
			}
			parts = append(parts, blk.Name+":"+strings.Join(vs, ","))
		}
		return strings.Join(parts, " ")
	}
	m := handModels[0]
	none, blocks := compileRecompute(t, m, levers.RecomputeNone), compileRecompute(t, m, levers.RecomputeBlocks)
	// Saved values named by the forward step producing them: step 0 z0,
	// 1 h0, 2 z1, 3 h1, 4 z2, 5 h2.
	if got, want := names(none), "L0:0 L1:1,2 L2:3,4,5"; got != want {
		t.Errorf("without recompute saved %s, want %s", got, want)
	}
	if got, want := names(blocks), "L0: L1:1 L2:3"; got != want {
		t.Errorf("with recompute saved %s, want %s\n%s", got, want, describe(blocks))
	}
	// The re-run: Linear and LeakyReLU of L2 (the loss's gradient reads
	// h2), the Linear of L1 and of L0: 4 steps more, each backward.
	if got, want := blocks.Steps()-none.Steps(), 4; got != want {
		t.Errorf("%d steps more with recompute, want %d", got, want)
	}
	if nb, bb := none.Bytes(), blocks.Bytes(); bb.Saved != 2*32 || nb.Saved != 6*32 {
		t.Errorf("saved bytes %d with recompute, %d without; want 64 and 192", bb.Saved, nb.Saved)
	}
}

// TestRecomputeCopiesByHand counts the copies of the linear hand model's
// training with recompute under each policy with a window of one block,
// derived by hand below. W is a block's 80 B of parameters; a one saved
// activation's 32 B; each Run has 23 steps.
//
// With recompute L0 keeps nothing (its input is the data), L1 keeps h0
// and L2 keeps h1. The steps and the blocks they need: forward 0 Linear0
// [L0], 1 LeakyReLU (h0, L1's), 2 Linear1 [L1], 3 LeakyReLU (h1, L2's),
// 4 Linear2 [L2], 5 LeakyReLU, 6 MSE; backward 7 Linear2 again [L2], 8
// LeakyReLU again, 9–10 the loss's and LeakyReLU's gradients, 11–12
// Linear2's input and weight gradients [L2], 13 its bias gradient, L2's
// update; 14 Linear1 again [L1], 15 LeakyReLU's gradient, 16–17 [L1], 18,
// L1's update; 19 Linear0 again [L0], 20–22 (the weight gradient reads the
// data, not a saved value: no block), L0's update. h0 lives from step 1 to
// 17, h1 from 3 to 12.
func TestRecomputeCopiesByHand(t *testing.T) {
	sc := compileRecompute(t, handModels[0], levers.RecomputeBlocks)

	// Window (DictCache's), window 1: Adam's moments stay resident, a
	// load or write-back moves W. First batch: miss L0, load W. h0
	// staged (a). Miss L1: L0 written back (W, nothing saved); L1 loaded
	// (W) with h0 (a). h1 staged (a). Miss L2: L1 written back (W), h0
	// offloaded (a); L2 loaded (W) with h1 (a). L2 hits to its update.
	// Miss L1 (step 14): L2 written back (W), h1 dead, dropped (a); L1
	// loaded (W) with h0 (a). Miss L0 (19): L1 written back (W), h0
	// dropped (a); L0 loaded (W), and stays for the next batch. b1: 5 W
	// loads, 3 saved loads, 4 write-backs, 1 offload, 2 stages, 2 drops;
	// b2 the same but L0 hits: 4 W loads. (Without recompute the same
	// window moves 8 saved loads of 320 B an epoch, 4 offloads of 192 B
	// and drops 320 B: linearCases.)
	want := [2]tally{
		{loadWeights: {9, 720}, loadSaved: {6, 192}, writeBack: {8, 640}, offload: {2, 64}, stage: {4, 128}, drop: {4, 128}},
		{loadWeights: {8, 640}, loadSaved: {6, 192}, writeBack: {8, 640}, offload: {2, 64}, stage: {4, 128}, drop: {4, 128}},
	}
	got, log := recordEpochs(t, sc, 1, 2, 2)
	if [2]tally(got) != want {
		t.Errorf("window policy:\n got  %v\n want %v\ncopies, batch by batch:\n%s", got, want, strings.Join(log, "\n"))
	}

	cases := []struct {
		policy cache.Policy
		want   Copies
	}{
		// Window: the tally's second epoch, and each batch's output (4 B):
		// up 640 + 192, down 640 + 64 + 128 + 8; a block's W is two
		// copies (weight and bias).
		{cache.Window, Copies{UploadBytes: 832, DownloadBytes: 840, Count: 8*2 + 6 + 8*2 + 2 + 4 + 2}},
		// Window-paged, window 1: the same misses as the window, each
		// load and write-back moving the block's parameters and Adam's
		// two moments, 3W = 240 B in 6 copies (weight, bias, and their
		// m and v). An epoch: 8 loads (1920 B) and 6 saved loads (192 B)
		// up; 8 write-backs (1920 B), 2 offloads (64), 4 stages (128) and
		// 2 outputs (8) down.
		{cache.WindowPaged, Copies{UploadBytes: 2112, DownloadBytes: 2120, Count: 8*6 + 6 + 8*6 + 2 + 4 + 2}},
		// Auto, window 1: blocks 3W with their moments; a block is
		// written back only once updated; after each step the next
		// needed block is loaded ahead in place of the resident one when
		// that one is needed later. A batch after the first starts with
		// L0 resident and updated. After step 0: L1 is needed at 2, L0
		// not before 19: L0 written back (3W), L1 loaded ahead (3W; h0
		// not computed yet). h0 is written in place (L1 is resident).
		// After step 2: L2 needed at 4, L1 not before 14: L1 evicted,
		// unchanged, h0 offloaded (a); L2 loaded ahead (3W). h1 written
		// in place. L2 is needed at 7, 11, 12 and its update: nothing
		// moves until after that update: L1 needed at 14, L2 not this
		// Run: L2 written back (3W; h1 dead), L1 loaded ahead with h0
		// (3W + a). After L1's update: L1 written back (3W; h0 dead), L0
		// loaded ahead (3W). Per batch: up 4 × 240 + 32 = 992 B, all
		// ahead; down 3 × 240 + 32 + the output's 4 = 756 B; copies 4 ×
		// 6 + 1 up, 3 × 6 + 1 + 1 down.
		{cache.Auto, Copies{UploadBytes: 1984, DownloadBytes: 1512, OverlapBytes: 1984, Count: 2 * (25 + 20)}},
	}
	for _, tc := range cases {
		pl := Paged{Cache: cache.Config{Policy: tc.policy, Window: 1}}
		c, err := sc.Copies(pl, 1, 2, []*gorgonia.Node{})
		if err != nil {
			t.Fatal(err)
		}
		if c != tc.want {
			t.Errorf("%s policy, window 1: Copies %+v, want %+v", tc.policy, c, tc.want)
		}
	}
}
