package models

import (
	"fmt"
	"strings"

	"gpuz/internal/hfconfig"
	"gpuz/internal/levers"
)

// leverFields are the fields of a config that the model's levers set,
// declared by each config: nil for a lever its workload does not take,
// with the reason, and the workload's name for the line that refuses it.
// Recompute, precision and gradient accumulation are the schedule's
// (engine.Spec): every workload takes them, gradient accumulation also
// dividing the config's batch into micro-batches (set).
type leverFields struct {
	workload string
	// attention is the config's attention setting, nil without attention
	// layers; inForce is the setting the model runs with (the workload's
	// default for "").
	attention *levers.Attention
	inForce   levers.Attention
	// lora is the config's LoRA setting, nil without linear layers to
	// adapt; layers names those layers (the config itself).
	lora   *levers.LoRA
	layers loraConfig
}

func (c *LinearConfig) leverFields() leverFields {
	return leverFields{workload: "linear", lora: &c.LoRA, layers: c}
}

func (c *ResnetConfig) leverFields() leverFields { return leverFields{workload: "resnet"} }

func (c *AttentionConfig) leverFields() leverFields {
	return leverFields{workload: "attention", attention: &c.Attention, inForce: c.attention(), lora: &c.LoRA, layers: c}
}

func (c *LLMConfig) leverFields() leverFields {
	return leverFields{workload: "llm", attention: &c.Attention, inForce: c.attention(), lora: &c.LoRA, layers: c}
}

// The blocks each workload's Build lists: linear's blocks; resnet's a
// and b per level; attention's head and embed before its layers; llm's
// embed, its layers and head.
func (c *LinearConfig) blockCount() int    { return c.Blocks }
func (c *ResnetConfig) blockCount() int    { return 2 * c.Levels }
func (c *AttentionConfig) blockCount() int { return c.Layers + 2 }
func (c *LLMConfig) blockCount() int       { return c.Layers + 2 }

// BlockCount returns the number of blocks c's model has, without building
// it: a gorgonia graph cannot be shared among the modes' programs
// (engine.Compile adds the gradients to it), so a run builds the model per
// mode, and a caller that only needs the count (--place) counts here.
func BlockCount(c Config) int { return c.blockCount() }

// clone returns a copy of the config, whose lever fields Apply may set.
func (c *LinearConfig) clone() Config    { d := *c; return &d }
func (c *ResnetConfig) clone() Config    { d := *c; return &d }
func (c *AttentionConfig) clone() Config { d := *c; return &d }
func (c *LLMConfig) clone() Config       { d := *c; return &d }

// takes returns the levers whose fields f has, the schedule's first.
func (f leverFields) takes() []levers.Lever {
	out := []levers.Lever{levers.LeverRecompute, levers.LeverPrecision, levers.LeverGradAccum}
	if f.attention != nil {
		out = append(out, levers.LeverAttention)
	}
	if f.lora != nil {
		out = append(out, levers.LeverLoRA)
	}
	return out
}

// refusal is the line that refuses lever l on a workload that does not
// take it.
func (f leverFields) refusal(l levers.Lever) error {
	what := map[levers.Lever]string{levers.LeverAttention: "attention layers", levers.LeverLoRA: "linear layers to adapt"}[l]
	return fmt.Errorf("--%s: the %s workload has no %s", l, f.workload, what)
}

// Check refuses, in one line naming the lever and the workload, a lever
// of s that the workload does not take (Workload.Levers), and a setting
// that is not one of the lever's.
func (w Workload) Check(s levers.Set) error {
	_, err := set(w.config(), s)
	return err
}

// Apply returns a copy of c with the model's levers of s set, checked: its
// attention and its LoRA (where s gives them; "" and the zero LoRA keep
// c's own), and its batch a micro-batch of s.GradAccum's (the batch
// divided by K; a batch K does not divide is refused naming both). It is the one place a lever reaches a model: the command
// line, a plan and fit build through it. A lever the workload does not
// take is refused in one line naming the lever and the workload.
func Apply(c Config, s levers.Set) (Config, error) {
	c, err := set(c, s)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// set returns a copy of c with the model's levers of s set, unchecked but
// for the levers themselves.
func set(c Config, s levers.Set) (Config, error) {
	if err := s.Attention.Validate(); err != nil {
		return nil, fmt.Errorf("--attention: %w", err)
	}
	if s.LoRA != (levers.LoRA{}) {
		if err := s.LoRA.Validate(); err != nil {
			return nil, err
		}
	}
	if s.Weights.Quantized() {
		if l, ok := c.(*LLMConfig); !ok || l.Model.Arch == nil || l.Model.Arch.Weights == hfconfig.Conv1DWeights {
			return nil, fmt.Errorf("--weights %v: only a Llama-family decoder's projections are stored quantized, not %s's", s.Weights, quantizedName(c))
		}
	}
	c = c.clone()
	if s.GradAccum != 0 {
		feed := c.feedOf()
		micro, err := s.GradAccum.MicroBatch(feed.Batch)
		if err != nil {
			return nil, err
		}
		feed.Batch = micro
	}
	f := c.leverFields()
	if s.Attention != "" {
		if f.attention == nil {
			return nil, f.refusal(levers.LeverAttention)
		}
		*f.attention = s.Attention
	}
	if s.LoRA != (levers.LoRA{}) {
		if f.lora == nil {
			return nil, f.refusal(levers.LeverLoRA)
		}
		*f.lora = s.LoRA
	}
	return c, nil
}

// LoRATargets returns the layers c's LoRA adapts, resolved (the default
// or all-linear named), nil when it is off or the workload takes none.
func LoRATargets(c Config) []string {
	f := c.leverFields()
	if f.lora == nil || !f.lora.On() {
		return nil
	}
	targets, _ := loraTargets(f.layers)
	return targets
}

// InForce returns the model's levers that c runs with: its attention (the
// workload's default for "", and "" without attention layers) and its
// LoRA with its targets resolved (the zero LoRA when it is off or the
// workload takes none). The schedule's levers are left zero.
func InForce(c Config) levers.Set {
	f := c.leverFields()
	var s levers.Set
	if f.attention != nil {
		s.Attention = f.inForce
	}
	if f.lora != nil && f.lora.On() {
		s.LoRA = *f.lora
		s.LoRA.Targets = strings.Join(LoRATargets(c), ",")
	}
	return s
}

// quantizedName names c's model for the --weights refusal: the llm
// workload's model type (gpt2), another workload's name.
func quantizedName(c Config) string {
	if l, ok := c.(*LLMConfig); ok {
		return l.Model.Config.ModelType
	}
	return "the " + c.leverFields().workload + " workload"
}
