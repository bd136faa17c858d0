package models

import (
	"fmt"
	"slices"
	"testing"

	"gpuz/internal/levers"
)

// TestWorkloadLevers checks what each workload declares it takes, that
// Apply refuses a lever a workload does not take in one line naming the
// lever and the workload, and that it sets a lever taken on a copy,
// leaving the config it was given as it was.
func TestWorkloadLevers(t *testing.T) {
	schedule := []levers.Lever{levers.LeverRecompute, levers.LeverPrecision, levers.LeverGradAccum}
	attention := levers.Set{Attention: levers.AttentionFused}
	lora := levers.Set{LoRA: levers.LoRA{Rank: 2}}
	for _, tc := range []struct {
		w      Workload
		takes  []levers.Lever
		refuse map[string]levers.Set // the line, by the set refused
	}{
		{Linear, append(schedule, levers.LeverLoRA), map[string]levers.Set{
			"--attention: the linear workload has no attention layers": attention}},
		{Resnet, schedule, map[string]levers.Set{
			"--attention: the resnet workload has no attention layers":  attention,
			"--lora: the resnet workload has no linear layers to adapt": lora}},
		{Attention, append(schedule, levers.LeverAttention, levers.LeverLoRA), nil},
		{LLM, append(schedule, levers.LeverAttention, levers.LeverLoRA), nil},
	} {
		t.Run(tc.w.Name, func(t *testing.T) {
			if !slices.Equal(tc.w.Levers, tc.takes) {
				t.Errorf("Levers = %v, want %v", tc.w.Levers, tc.takes)
			}
			for want, s := range tc.refuse {
				if err := tc.w.Check(s); err == nil || err.Error() != want {
					t.Errorf("Check(%+v) = %v, want %q", s, err, want)
				}
			}
			if err := tc.w.Check(levers.Set{Recompute: levers.RecomputeBlocks, Precision: levers.BF16}); err != nil {
				t.Errorf("the schedule's levers refused: %v", err)
			}
		})
	}
	for _, w := range []Workload{Linear, Attention} {
		c, _, err := w.Configure(ScaleSmall, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Apply(c, lora)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		if in := InForce(got).LoRA; in.Rank != 2 || in.Targets == "" {
			t.Errorf("%s: LoRA in force %+v, want rank 2 with its targets resolved", w.Name, in)
		}
		if InForce(c).LoRA.On() {
			t.Errorf("%s: Apply changed the config it was given", w.Name)
		}
	}
}

// TestBlockCount checks that every workload counts, without building,
// the blocks its Build lists.
func TestBlockCount(t *testing.T) {
	var configs []Config
	for _, w := range []Workload{Linear, Resnet, Attention} {
		for _, scale := range []string{ScaleSmall, ScaleDemo} {
			c, _, err := w.Configure(scale, nil)
			if err != nil {
				t.Fatal(err)
			}
			configs = append(configs, c)
		}
	}
	for _, tl := range tinyLLMs {
		c := tinyLLM(t, tl.config, 5, 3)
		configs = append(configs, &c)
	}
	for _, c := range configs {
		m, err := c.Build()
		if err != nil {
			t.Fatal(err)
		}
		if got := BlockCount(c); got != len(m.Blocks) {
			t.Errorf("%T: BlockCount %d, Build lists %d blocks", c, got, len(m.Blocks))
		}
	}
}

// TestApplyGradAccum: gradient accumulation builds the model for a
// micro-batch, the batch divided by K, on a copy; a batch K does not
// divide is refused naming both.
func TestApplyGradAccum(t *testing.T) {
	for _, w := range []Workload{Linear, Resnet, Attention} {
		c, _, err := w.Configure(ScaleSmall, nil)
		if err != nil {
			t.Fatal(err)
		}
		batch := FeedOf(c).Batch
		got, err := Apply(c, levers.Set{GradAccum: 2})
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		if FeedOf(got).Batch != batch/2 || FeedOf(c).Batch != batch {
			t.Errorf("%s: batch %d, given %d: want %d on a copy", w.Name, FeedOf(got).Batch, FeedOf(c).Batch, batch/2)
		}
		k := levers.GradAccum(batch + 1)
		want := fmt.Sprintf("--grad-accum %d: the batch (%d) is not a multiple of it", k, batch)
		if _, err := Apply(c, levers.Set{GradAccum: k}); err == nil || err.Error() != want {
			t.Errorf("%s: Apply with K=%d: %v, want %s", w.Name, k, err, want)
		}
	}
}
