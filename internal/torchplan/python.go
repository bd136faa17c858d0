package torchplan

import (
	"fmt"
	"strings"
)

// Python is s as a PyTorch user sets it: the HF Trainer's
// TrainingArguments, PEFT's LoraConfig and the model's attention, e.g.
// `TrainingArguments(bf16=True, gradient_checkpointing=True,
// per_device_train_batch_size=1), LoraConfig(r=16,
// target_modules=["q_proj", "v_proj"]), attn_implementation="sdpa"`.
func (s Step) Python() string {
	if s.Eval {
		return s.EvalPython()
	}
	return "TrainingArguments(" + s.TrainingArguments() + "), " + s.ModelPython()
}

// EvalPython is s's evaluation pass as a PyTorch user sets it: bf16
// autocast and the batch in TrainingArguments (Trainer.evaluate runs the
// model under no_grad, in the same autocast as training), the model's
// LoRA and attention.
func (s Step) EvalPython() string {
	s.Eval = true
	return "TrainingArguments(" + s.TrainingArguments() + "), " + s.ModelPython()
}

// TrainingArguments is the arguments of s's TrainingArguments: of an
// evaluation pass bf16 and per_device_eval_batch_size.
func (s Step) TrainingArguments() string {
	var args []string
	if s.Autocast {
		args = append(args, "bf16=True")
	}
	if s.Checkpoint && !s.Eval {
		args = append(args, "gradient_checkpointing=True")
	}
	batch := "per_device_train_batch_size"
	if s.Eval {
		batch = "per_device_eval_batch_size"
	}
	args = append(args, fmt.Sprintf("%s=%d", batch, s.Batch))
	return strings.Join(args, ", ")
}

// ModelPython is how s's model is set up: PEFT's LoraConfig, if any, and
// the attention transformers runs.
func (s Step) ModelPython() string {
	var parts []string
	if s.LoRARank > 0 {
		targets := s.LoRATargets
		if targets == nil {
			targets = s.Model.Arch.LoRADefault
		}
		quoted := make([]string, len(targets))
		for i, t := range targets {
			quoted[i] = fmt.Sprintf("%q", t)
		}
		parts = append(parts, fmt.Sprintf("LoraConfig(r=%d, target_modules=[%s])", s.LoRARank, strings.Join(quoted, ", ")))
	}
	attn := "eager"
	if s.SDPA {
		attn = "sdpa"
	}
	return strings.Join(append(parts, fmt.Sprintf("attn_implementation=%q", attn)), ", ")
}

// Title names fw as a plan's heading does.
func (fw Framework) Title() string {
	switch fw {
	case Torch:
		return "PyTorch 2.x with transformers"
	case Torch113:
		return "PyTorch 1.13 with transformers"
	}
	return "gpuz"
}
