package models

import (
	"fmt"
	"slices"
)

// Size declares one integer size of a workload, once: the name of its flag
// (--Name) and the name its errors give it, the flag's usage, and its value
// in each preset. A workload's sizes are listed in the order they are
// checked, and each config's sizes method returns pointers to its fields in
// that order.
type Size struct {
	Name        string
	Usage       string
	Full, Small int
	// KeepsScale marks a size that does not change the workload's shape
	// (the epochs): set by the user, it leaves the run's scale named after
	// the preset rather than "custom".
	KeepsScale bool
}

// ScaleCustom names the scale of a run whose shape the user changed.
const ScaleCustom = "custom"

// sharedSizes declares the sizes every workload has, with the workload's
// presets for each: batch, samples and epochs, each as {full, small}.
func sharedSizes(batch, samples, epochs [2]int) []Size {
	return []Size{
		{Name: "batch", Usage: "samples per batch (default: the preset's)", Full: batch[0], Small: batch[1]},
		{Name: "samples", Usage: "samples in the data set, a multiple of --batch (default: the preset's)", Full: samples[0], Small: samples[1]},
		{Name: "epochs", Usage: "epochs per mode, warm-up included (default: the workload's)", Full: epochs[0], Small: epochs[1], KeepsScale: true},
	}
}

// Config is a workload's sizes: what the runner builds and feeds, and
// their check.
type Config interface {
	Build() (*Model, error)
	Data(seed uint64) Data
	Validate() error
	// Schedule returns the sizes that say how the data is fed.
	Schedule() Schedule
}

// Schedule is how a workload's data is fed: Samples in batches of Batch,
// for Epochs epochs.
type Schedule struct {
	Samples, Batch, Epochs int
}

// Workload describes a workload: its name and its sizes, declared once,
// from which its command's flags, its presets, its size checks and the
// run's header follow.
type Workload struct {
	Name  string
	Sizes []Size
	// config returns a zero config and pointers to its sizes, in the order
	// of Sizes.
	config func() (Config, []*int)
}

// The workloads.
var (
	// Linear is the linear workload: blocks of Linear + LeakyReLU layers.
	Linear = Workload{Name: "linear", Sizes: linearSizes, config: func() (Config, []*int) { c := &LinearConfig{}; return c, c.sizes() }}
	// Resnet is the resnet workload: nested residual convolutions.
	Resnet = Workload{Name: "resnet", Sizes: resnetSizes, config: func() (Config, []*int) { c := &ResnetConfig{}; return c, c.sizes() }}
	// Attention is the attention workload: a causal self-attention decoder.
	Attention = Workload{Name: "attention", Sizes: attentionSizes, config: func() (Config, []*int) { c := &AttentionConfig{}; return c, c.sizes() }}
)

// Configure returns the workload's config at a scale with the sizes in set
// (by name) put over the preset's, checked, and the name of the run's
// scale: the preset's, or "custom" when set changes the shape.
func (w Workload) Configure(scale string, set map[string]int) (Config, string, error) {
	c, fields := w.config()
	if err := preset(w.Sizes, scale, fields); err != nil {
		return nil, "", err
	}
	name := scale
	for i, s := range w.Sizes {
		if v, ok := set[s.Name]; ok {
			*fields[i] = v
			if !s.KeepsScale {
				name = ScaleCustom
			}
		}
	}
	for n := range set {
		if !slices.ContainsFunc(w.Sizes, func(s Size) bool { return s.Name == n }) {
			return nil, "", fmt.Errorf("the %s workload has no size %q", w.Name, n)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, "", err
	}
	return c, name, nil
}

// preset sets each field to its size's value at a scale.
func preset(sizes []Size, scale string, fields []*int) error {
	for i, s := range sizes {
		switch scale {
		case ScaleFull:
			*fields[i] = s.Full
		case ScaleSmall:
			*fields[i] = s.Small
		default:
			return fmt.Errorf("unknown scale %q (want %s or %s)", scale, ScaleFull, ScaleSmall)
		}
	}
	return nil
}

// positive reports the first size, in declaration order, that is not
// positive.
func positive(sizes []Size, fields []*int) error {
	for i, s := range sizes {
		if *fields[i] <= 0 {
			return fmt.Errorf("--%s must be positive, got %d", s.Name, *fields[i])
		}
	}
	return nil
}

// divides reports samples that do not fill whole batches.
func divides(samples, batch int) error {
	if samples%batch != 0 {
		return fmt.Errorf("--samples (%d) must be a multiple of --batch (%d)", samples, batch)
	}
	return nil
}
