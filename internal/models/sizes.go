package models

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"gpuz/internal/hfconfig"
	"gpuz/internal/levers"
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
	// blockCount is the number of blocks Build lists, known before
	// building.
	blockCount() int
	// leverFields declares the levers the config takes (levers.go).
	leverFields() leverFields
	// clone returns a copy of the config.
	clone() Config
}

// sized is a config that declares its workload's sizes.
type sized interface {
	sizes() []Size
	feed() Feed
	// feedOf is the config's own Feed, which Apply's gradient
	// accumulation divides.
	feedOf() *Feed
}

// Feed is how a workload's data is fed: Samples in batches of Batch, for
// Epochs epochs. Every workload's config embeds one.
type Feed struct {
	Samples, Batch, Epochs int
}

// sizeUsage says what each size sizes: its flag's usage, less the
// default.
var sizeUsage = map[string]string{
	"blocks":           "blocks in the model",
	"layers-per-block": "Linear+LeakyReLU layers per block",
	"dims":             "width of every layer",
	"levels":           "nested residual levels, two blocks each",
	"channels":         "channels of the images and of every residual",
	"mid-channels":     "channels inside a block, between its convolutions",
	"image-size":       "height and width of the images",
	"kernel":           "side of the square kernels, odd; padded by kernel/2",
	"vocab":            "token ids, rows of the embedding and outputs of the head",
	"d-model":          "width of the model, even and a multiple of --heads",
	"heads":            "attention heads per layer",
	"layers":           "decoder layers, one block each",
	"seq-len":          "tokens per sequence",
	"batch":            "samples per batch",
	"samples":          "samples in the data set, a multiple of --batch",
	"epochs":           "epochs per mode, warm-up included",
}

// sizeTable declares every workload's sizes, once: the workload, the name
// of the size (its flag is --name; its usage is sizeUsage's) and its value
// at each scale, each workload's sizes in the order they are checked, its
// Feed's last. A config's sizes method binds them to the fields they set.
var sizeTable = []struct {
	workload, name    string
	full, small, demo int
}{
	{"linear", "blocks", 12, 3, 12},
	{"linear", "layers-per-block", 10, 2, 4},
	{"linear", "dims", 2000, 128, 512},
	{"linear", "batch", 30, 4, 16},
	{"linear", "samples", 60, 8, 64},
	{"linear", "epochs", 5, 5, 4},
	{"resnet", "levels", 12, 3, 8},
	{"resnet", "channels", 10, 4, 8},
	{"resnet", "mid-channels", 30, 8, 16},
	{"resnet", "image-size", 512, 32, 128},
	{"resnet", "kernel", 5, 3, 3},
	{"resnet", "batch", 2, 2, 2},
	{"resnet", "samples", 6, 6, 4},
	{"resnet", "epochs", 10, 10, 4},
	{"attention", "vocab", 1024, 64, 1024},
	{"attention", "d-model", 512, 32, 256},
	{"attention", "heads", 8, 4, 4},
	{"attention", "layers", 12, 2, 8},
	{"attention", "seq-len", 512, 32, 128},
	{"attention", "batch", 30, 4, 8},
	{"attention", "samples", 60, 8, 32},
	{"attention", "epochs", 5, 5, 4},
	// The llm workload's layers preset is the model's (llmLayers).
	{"llm", "layers", 0, 0, 0},
	{"llm", "seq-len", 512, 32, 128},
	{"llm", "batch", 4, 2, 2},
	{"llm", "samples", 8, 4, 8},
	{"llm", "epochs", 3, 3, 3},
}

// sizes binds the linear workload's sizes to the fields they set.
func (c *LinearConfig) sizes() []Size {
	return sizesOf("linear", &c.Feed, &c.Blocks, &c.LayersPerBlock, &c.Dims)
}

// sizes binds the resnet workload's sizes to the fields they set.
func (c *ResnetConfig) sizes() []Size {
	return sizesOf("resnet", &c.Feed, &c.Levels, &c.Channels, &c.MidChannels, &c.ImageSize, &c.Kernel)
}

// sizes binds the attention workload's sizes to the fields they set.
func (c *AttentionConfig) sizes() []Size {
	return sizesOf("attention", &c.Feed, &c.Vocab, &c.DModel, &c.Heads, &c.Layers, &c.SeqLen)
}

// sizes binds the llm workload's sizes to the fields they set. The layers'
// presets are the model's: all its layers at full scale, at most 2 at
// small and at most 4 at demo.
func (c *LLMConfig) sizes() []Size {
	sizes := sizesOf("llm", &c.Feed, &c.Layers, &c.SeqLen)
	l := &sizes[0]
	l.Full, l.Small, l.Demo = c.Model.Layers, min(2, c.Model.Layers), min(4, c.Model.Layers)
	l.Usage = "the model's first N decoder layers, one block each (default: all of them at --scale full, 2 at small, 4 at demo)"
	return sizes
}

// sizesOf returns the workload's sizes in sizeTable, bound in order to
// fields and then to feed's batch, samples and epochs. The epochs keep the
// scale, their default being the workload's; the other sizes' default is
// the preset's.
func sizesOf(workload string, feed *Feed, fields ...*int) []Size {
	fields = append(fields, &feed.Batch, &feed.Samples, &feed.Epochs)
	var sizes []Size
	for _, row := range sizeTable {
		if row.workload == workload {
			sizes = append(sizes, Size{Name: row.name, Full: row.full, Small: row.small, Demo: row.demo})
		}
	}
	if len(sizes) != len(fields) {
		panic(fmt.Sprintf("models: the %s workload has %d sizes for %d fields", workload, len(sizes), len(fields)))
	}
	for i := range sizes {
		s := &sizes[i]
		s.field, s.KeepsScale = fields[i], fields[i] == &feed.Epochs
		s.Usage = sizeUsage[s.Name] + " (default: the preset's)"
		if s.KeepsScale {
			s.Usage = sizeUsage[s.Name] + " (default: the workload's)"
		}
	}
	return sizes
}

// validate reports the first size of c that is not positive, else what
// check, the workload's own checks, reports.
func validate(c sized, check func() error) error {
	if err := positive(c.sizes()); err != nil {
		return err
	}
	return check()
}

func (f Feed) feed() Feed { return f }

func (f *Feed) feedOf() *Feed { return f }

// FeedOf returns how c's data is fed.
func FeedOf(c Config) Feed { return c.feed() }

// SeqLenOf returns the tokens per sequence of a workload of sequences
// (llm, attention), 0 for the others.
func SeqLenOf(c Config) int {
	switch c := c.(type) {
	case *LLMConfig:
		return c.SeqLen
	case *AttentionConfig:
		return c.SeqLen
	}
	return 0
}

// Workload describes a workload: its name and its sizes, declared once,
// from which its command's flags, its presets, its size checks and the
// run's header follow.
type Workload struct {
	Name  string
	Sizes []Size
	// Levers lists the levers the workload takes, as its config declares
	// them: recompute and precision always, attention where it has
	// attention layers, LoRA where it has linear layers to adapt.
	Levers []levers.Lever
	// config returns a new config, zero.
	config func() Config
}

// workload describes the workload whose config is a C.
func workload[C any, P interface {
	*C
	Config
}](name string) Workload {
	c := P(new(C))
	return Workload{Name: name, Sizes: c.sizes(), Levers: c.leverFields().takes(), config: func() Config { return P(new(C)) }}
}

// The workloads.
var (
	// Linear is the linear workload: blocks of Linear + LeakyReLU layers.
	Linear = workload[LinearConfig]("linear")
	// Resnet is the resnet workload: nested residual convolutions.
	Resnet = workload[ResnetConfig]("resnet")
	// Attention is the attention workload: a causal self-attention decoder.
	Attention = workload[AttentionConfig]("attention")
	// LLM is the llm workload with no model yet: its sizes' names and
	// usage, for its command's flags; LLMOf gives it its model.
	LLM = workload[LLMConfig]("llm")
)

// LLMOf returns the llm workload of the model m: its layers' presets
// are m's.
func LLMOf(m hfconfig.Model) Workload {
	newConfig := func() Config { return &LLMConfig{Model: m} }
	return Workload{Name: LLM.Name, Sizes: newConfig().sizes(), Levers: LLM.Levers, config: newConfig}
}

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

// WithSize returns a copy of c with its size name set to v, checked as
// Configure checks a config (c itself is left as it was): how a search
// over one size (fit's longest sequence) varies it.
func WithSize(c Config, name string, v int) (Config, error) {
	d := c.clone()
	i := slices.IndexFunc(d.sizes(), func(s Size) bool { return s.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("the workload has no size %q", name)
	}
	*d.sizes()[i].field = v
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
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
