package torchplan

import (
	"cmp"
	"slices"
)

// Choice is one PyTorch configuration a fit plans: the step with its
// levers, its plan, and whether its peak is within the budget.
type Choice struct {
	Step Step
	Plan Plan
	Fits bool
}

// Rank plans each base step (one per LoRA setting, say) under every
// lever a PyTorch user has beside them: float32 or bf16 autocast,
// gradient checkpointing off or on (a training step's), and each batch of
// batches; and ranks
// them: those whose peak is within budget first, then the larger batch
// (more tokens a step), without checkpointing before with (it runs each
// layer's forward pass twice), bf16 before fp32 (tensor cores), then the
// smaller peak. It predicts no time: the order is the rule's.
func Rank(bases []Step, fw Framework, batches []int, budget int64) ([]Choice, error) {
	var out []Choice
	for _, base := range bases {
		for _, batch := range batches {
			for _, autocast := range []bool{true, false} {
				for _, checkpoint := range []bool{false, true} {
					if checkpoint && base.Eval {
						continue
					}
					s := base
					s.Batch, s.Autocast, s.Checkpoint = batch, autocast, checkpoint
					p, err := PlanStep(s, fw)
					if err != nil {
						return nil, err
					}
					out = append(out, Choice{Step: s, Plan: p, Fits: p.Peak <= budget})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Choice) int {
		return cmp.Or(
			boolFirst(a.Fits, b.Fits),
			cmp.Compare(b.Step.Batch, a.Step.Batch),
			boolFirst(!a.Step.Checkpoint, !b.Step.Checkpoint),
			boolFirst(a.Step.Autocast, b.Step.Autocast),
			cmp.Compare(a.Plan.Peak, b.Plan.Peak))
	})
	return out, nil
}

// boolFirst orders true before false.
func boolFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}
