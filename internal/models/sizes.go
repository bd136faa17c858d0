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
// their check. The configs are *LinearConfig, *ResnetConfig and
// *AttentionConfig.
type Config interface {
	Build() (*Model, error)
	Data(seed uint64) Data
	Validate() error
	sized
}

// sized is a config that pairs its workload's declared sizes with pointers
// to its fields, in the same order.
type sized interface {
	sizes() ([]Size, []*int)
}

// Feed is how a workload's data is fed: Samples in batches of Batch,
// for Epochs epochs.
type Feed struct {
	Samples, Batch, Epochs int
}

// FeedOf returns how c's data is fed: its shared sizes.
func FeedOf(c Config) Feed {
	var s Feed
	sizes, fields := c.sizes()
	for i, size := range sizes {
		switch size.Name {
		case "samples":
			s.Samples = *fields[i]
		case "batch":
			s.Batch = *fields[i]
		case "epochs":
			s.Epochs = *fields[i]
		}
	}
	return s
}

// Workload describes a workload: its name and its sizes, declared once,
// from which its command's flags, its presets, its size checks and the
// run's header follow.
type Workload struct {
	Name  string
	Sizes []Size
	// config returns a new config, zero.
	config func() Config
}

// workload describes the workload whose config is a C.
func workload[C any, P interface {
	*C
	Config
}](name string) Workload {
	sizes, _ := P(new(C)).sizes()
	return Workload{Name: name, Sizes: sizes, config: func() Config { return P(new(C)) }}
}

// The workloads.
var (
	// Linear is the linear workload: blocks of Linear + LeakyReLU layers.
	Linear = workload[LinearConfig]("linear")
	// Resnet is the resnet workload: nested residual convolutions.
	Resnet = workload[ResnetConfig]("resnet")
	// Attention is the attention workload: a causal self-attention decoder.
	Attention = workload[AttentionConfig]("attention")
)

// LinearPreset returns the linear workload's sizes at a scale.
func LinearPreset(scale string) (LinearConfig, error) { return presetOf[LinearConfig](scale) }

// ResnetPreset returns the resnet workload's sizes at a scale: the
// reference experiment's, or the PyTorch peer's small ones.
func ResnetPreset(scale string) (ResnetConfig, error) { return presetOf[ResnetConfig](scale) }

// AttentionPreset returns the attention workload's sizes at a scale.
func AttentionPreset(scale string) (AttentionConfig, error) { return presetOf[AttentionConfig](scale) }

// presetOf returns a C with its sizes at a scale.
func presetOf[C any, P interface {
	*C
	sized
}](scale string) (C, error) {
	var c C
	sizes, fields := P(&c).sizes()
	err := preset(scale, sizes, fields)
	return c, err
}

// Configure returns the workload's config at a scale with the sizes in set
// (by name) put over the preset's, checked, and the name of the run's
// scale: the preset's, or "custom" when set changes the shape.
func (w Workload) Configure(scale string, set map[string]int) (Config, string, error) {
	c := w.config()
	sizes, fields := c.sizes()
	if err := preset(scale, sizes, fields); err != nil {
		return nil, "", err
	}
	name := scale
	for i, s := range sizes {
		if v, ok := set[s.Name]; ok {
			*fields[i] = v
			if !s.KeepsScale {
				name = ScaleCustom
			}
		}
	}
	for n := range set {
		if !slices.ContainsFunc(sizes, func(s Size) bool { return s.Name == n }) {
			return nil, "", fmt.Errorf("the %s workload has no size %q", w.Name, n)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, "", err
	}
	return c, name, nil
}

// preset sets each field to its size's value at a scale.
func preset(scale string, sizes []Size, fields []*int) error {
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
