package torchplan

import "fmt"

// Plan is what PyTorch with transformers' modules holds at the peak of a
// training step with AdamW, by kind, in bytes.
type Plan struct {
	Framework Framework
	// Python is the step's settings as a user writes them (Step.Python).
	Python string
	// Parameters are every weight as loaded, float32; Trained the
	// elements that train (all of them, or LoRA's adapters alone).
	Parameters     int64
	ParameterCount int64
	TrainedCount   int64
	// WeightCopies are autocast's 16-bit copies of the weights that the
	// products save for the backward pass (0 without autocast).
	WeightCopies int64
	// Gradients are the trained parameters' float32 gradients.
	Gradients int64
	// Moments are AdamW's exp_avg and exp_avg_sq, float32 each.
	Moments int64
	// Saved are the activations the forward pass keeps for the backward
	// pass (the weight copies apart), SavedByOp the same by the rule's op
	// in the order first met; LogSoftmax the part the loss keeps, its
	// float32 log-softmax of the logits.
	Saved      int64
	SavedByOp  []OpBytes
	LogSoftmax int64
	// Transient is the backward pass's largest short-lived buffers: the
	// loss's two float32 gradients of the logits (nll_loss's and
	// log_softmax's), alive at once, or under checkpointing one decoder
	// layer's saved tensors re-made for its backward, whichever is larger.
	Transient int64
	// Peak is Parameters + Moments + the larger of (WeightCopies + Saved
	// + Transient), held as the backward pass starts, and Gradients, held
	// as it ends; of an evaluation pass, Parameters + WeightCopies + Live.
	Peak int64
	// Eval marks an evaluation pass's plan (PlanEval): no gradients,
	// moments or saved tensors; WeightCopies are autocast's cached copies
	// alive at the peak, Live the other tensors alive then (LogSoftmax
	// among them), LiveByOp the same by the op that made them.
	Eval     bool
	Live     int64
	LiveByOp []OpBytes
}

// OpBytes is the bytes one op's rule saved.
type OpBytes struct {
	Op    string
	Bytes int64
}

// PlanStep plans s under fw: a training step, or with s.Eval an
// evaluation pass (PlanEval).
func PlanStep(s Step, fw Framework) (Plan, error) {
	if s.Eval {
		return PlanEval(s, fw)
	}
	t, err := trace(s, fw)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Framework: fw, Python: s.Python()}
	p.tally(t)
	layers := s.Layers
	if layers <= 0 {
		layers = s.Model.Layers
	}
	p.Transient = 2 * 4 * int64(s.Batch) * int64(s.SeqLen) * int64(s.Model.Vocab)
	if s.Checkpoint {
		// One layer's own saved tensors, as it keeps them un-checkpointed:
		// the last layer's, which the backward pass re-makes first.
		one := s
		one.Checkpoint = false
		lt, err := trace(one, fw)
		if err != nil {
			return Plan{}, err
		}
		var last int64
		for _, sv := range lt.saved {
			if sv.Block == fmt.Sprintf("layer%d", layers) {
				last += sv.Bytes
			}
		}
		p.Transient = max(p.Transient, last)
	}
	p.Peak = p.Parameters + p.Moments + max(p.WeightCopies+p.Saved+p.Transient, p.Gradients)
	return p, nil
}
