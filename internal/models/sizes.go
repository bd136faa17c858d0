package models

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Size declares one integer size of a workload, once: the name of its flag
// (--Name) and the name its errors give it, the flag's usage, its value in
// each preset and the config field it sets. A workload's sizes are listed
// in the order they are checked.
type Size struct {
	Name              string
	Usage             string
	Full, Small, Demo int
	// KeepsScale marks a size that does not change the workload's shape
	// (the epochs): set by the user, it leaves the run's scale named after
	// the preset rather than "custom".
	KeepsScale bool
	// field is the config's field that the size sets.
	field *int
}

// ScaleCustom names the scale of a run whose shape the user changed.
const ScaleCustom = "custom"

// Config is a workload's sizes: what the runner builds and feeds, and
// their check. The configs are *LinearConfig, *ResnetConfig and
// *AttentionConfig.
type Config interface {
	Build() (*Model, error)
	Data(seed uint64) Data
	// DataLen is the number of values Data makes, known before making
	// them; Validate keeps it far below what int holds.
	DataLen() int
	Validate() error
	sized
}

// sized is a config that declares its workload's sizes.
type sized interface {
	sizes() []Size
	feed() Feed
}

// Feed is how a workload's data is fed: Samples in batches of Batch, for
// Epochs epochs. Every workload's config embeds one.
type Feed struct {
	Samples, Batch, Epochs int
}

// sizes declares the sizes every workload has, with the workload's full
// and small presets for each.
func (f *Feed) sizes(full, small, demo Feed) []Size {
	return []Size{
		{Name: "batch", Usage: "samples per batch (default: the preset's)", Full: full.Batch, Small: small.Batch, Demo: demo.Batch, field: &f.Batch},
		{Name: "samples", Usage: "samples in the data set, a multiple of --batch (default: the preset's)", Full: full.Samples, Small: small.Samples, Demo: demo.Samples, field: &f.Samples},
		{Name: "epochs", Usage: "epochs per mode, warm-up included (default: the workload's)", Full: full.Epochs, Small: small.Epochs, Demo: demo.Epochs, KeepsScale: true, field: &f.Epochs},
	}
}

func (f Feed) feed() Feed { return f }

// FeedOf returns how c's data is fed.
func FeedOf(c Config) Feed { return c.feed() }

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
	return Workload{Name: name, Sizes: P(new(C)).sizes(), config: func() Config { return P(new(C)) }}
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
	err := preset(scale, P(&c).sizes())
	return c, err
}

// Configure returns the workload's config at a scale with the sizes in set
// (by name) put over the preset's, checked, and the name of the run's
// scale: the preset's, or "custom" when set changes the shape.
func (w Workload) Configure(scale string, set map[string]int) (Config, string, error) {
	c := w.config()
	sizes := c.sizes()
	if err := preset(scale, sizes); err != nil {
		return nil, "", err
	}
	name := scale
	for _, s := range sizes {
		if v, ok := set[s.Name]; ok {
			*s.field = v
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
func preset(scale string, sizes []Size) error {
	for _, s := range sizes {
		switch scale {
		case ScaleFull:
			*s.field = s.Full
		case ScaleSmall:
			*s.field = s.Small
		case ScaleDemo:
			*s.field = s.Demo
		default:
			return fmt.Errorf("unknown scale %q (want %s, %s or %s)", scale, ScaleFull, ScaleSmall, ScaleDemo)
		}
	}
	return nil
}

// positive reports the first size, in declaration order, that is not
// positive.
func positive(sizes []Size) error {
	for _, s := range sizes {
		if *s.field <= 0 {
			return fmt.Errorf("--%s must be positive, got %d", s.Name, *s.field)
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

// maxElements bounds every tensor a workload allocates, the data set
// included: 2⁴⁰ elements (4 TiB of float32), far beyond any host yet far
// below where an element count or its bytes overflow int.
const maxElements = 1 << 40

// Bounds on the counts that set a graph's length. Building and compiling
// the graph grows faster than linearly with them; measured on a 2-core
// host, 4000 linear layers took 1.6 s, 400 resnet levels 0.9 s and 400
// attention layers 0.5 s, and a run builds the graph once per mode.
const (
	maxLinearLayers   = 4096 // blocks × layers-per-block
	maxResnetLevels   = 256
	maxAttentionLayer = 512
)

// product returns the product of factors, each positive, and whether it
// is at most limit. It never overflows: once the product passes limit it
// stops, so a false answer's product is meaningless.
func product(limit uint64, factors ...int) (uint64, bool) {
	p := uint64(1)
	for _, f := range factors {
		if f < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(p, uint64(f))
		if hi != 0 || lo > limit {
			return 0, false
		}
		p = lo
	}
	return p, true
}

// extent is one tensor a workload allocates: what it is and its
// dimensions.
type extent struct {
	what string
	dims []int
}

// tooLarge reports the first tensor with more than maxElements elements
// as "the model is too large: …", naming it and its sizes.
func tooLarge(tensors ...extent) error {
	for _, t := range tensors {
		if _, ok := product(maxElements, t.dims...); !ok {
			return fmt.Errorf("the model is too large: %s (%s) exceeds 2⁴⁰ elements", t.what, dimsString(t.dims))
		}
	}
	return nil
}

// dimsString writes dimensions as "a × b × c".
func dimsString(dims []int) string {
	s := make([]string, len(dims))
	for i, d := range dims {
		s[i] = strconv.Itoa(d)
	}
	return strings.Join(s, " × ")
}

// tooLong reports a count beyond the bound that keeps building the graph
// to a few seconds.
func tooLong(name string, n, limit int) error {
	if n > limit {
		return fmt.Errorf("the model is too large: %d %s, at most %d (a longer graph takes minutes to build)", n, name, limit)
	}
	return nil
}
