// Package hfconfig reads Hugging Face decoder configurations (config.json
// of the Llama family and GPT-2), checks that gpuz can build the
// computation they describe, names and shapes their parameters as
// transformers does, carries a few published configurations as presets,
// checks a snapshot's safetensors headers against the configuration, and
// reads a GGUF file's metadata and tensor table as a model (LoadGGUF).
// It imports nothing of gpuz's but filekind, quant (a GGUF tensor's
// storage kind) and termsafe: package models builds the graph from a
// Config.
package hfconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gpuz/internal/termsafe"
)

// Activation names a Config's Act takes.
const (
	ActSiLU     = "silu"      // the Llama family's SwiGLU gate
	ActGELUTanh = "gelu_tanh" // GPT-2's gelu_new, gelu_pytorch_tanh
)

// MaxVocab is the largest vocabulary accepted: token ids are carried in
// float32 tensors, exact up to 2²⁴.
const MaxVocab = 1 << 24

// MaxLayers is the largest number of layers accepted, so that Tensors()
// stays a list a program can hold whatever the file says.
const MaxLayers = 1 << 16

// Config is one decoder configuration: what gpuz needs to build the model
// a config.json describes.
type Config struct {
	ModelType     string       // as the file declares it
	Arch          *Arch        // the computation: ArchLlama or ArchGPT2
	Hidden        int          // hidden_size / n_embd
	Intermediate  int          // intermediate_size / n_inner (GPT-2: 4·n_embd when null)
	Layers        int          // num_hidden_layers / n_layer
	Heads         int          // num_attention_heads / n_head
	KVHeads       int          // num_key_value_heads, default Heads (GPT-2: Heads)
	HeadDim       int          // head_dim, default Hidden/Heads
	Vocab         int          // vocab_size
	MaxPositions  int          // max_position_embeddings / n_positions
	TieEmbeddings bool         // tie_word_embeddings (GPT-2: true unless the file says false)
	QKVBias       bool         // q, k, v projections have biases: attention_bias (llama, mistral) or always (qwen2)
	OutBias       bool         // o_proj has a bias: attention_bias (llama, mistral); never for qwen2
	MLPBias       bool         // mlp_bias (llama); GPT-2's biases are always there and are not flags
	Act           string       // ActSiLU or ActGELUTanh
	NormEps       float64      // rms_norm_eps / layer_norm_epsilon
	RopeTheta     float64      // rope_theta, default 10000 (llama family only)
	RopeScaling   *RopeScaling // nil: none
	SlidingWindow int          // 0 when none is in effect (qwen2's use_sliding_window false, or null)
	// Dropout is the largest dropout probability the file declares
	// (GPT-2's resid/embd/attn_pdrop, 0.1 each where the file leaves them
	// out, as transformers defaults them; the llama family's
	// attention_dropout); gpuz runs without dropout.
	Dropout float64
	// Dropouts names the dropout fields above 0 as "key p" pairs joined
	// by ", " ("resid_pdrop 0.1, embd_pdrop 0.1, attn_pdrop 0.3"), those
	// the file leaves out at transformers' default included, for Check's
	// warning; empty when there are none or the Config was not parsed.
	Dropouts string
	// Defaulted lists the fields the file leaves out that transformers'
	// config class fills in with a default and that set a size (or, for
	// Mistral and Qwen2, the key-value heads and the sliding window), as
	// "key value" pairs joined by ", "; gpuz takes the same defaults and
	// Check warns of them. Empty when the file gives them all.
	Defaulted string
}

// RopeScaling is rope_scaling; Type "llama3" is the one a config.json
// may name. Type RopeFreqs is a GGUF file's: the divisors themselves.
type RopeScaling struct {
	Type                                  string  // rope_type (or the older key type)
	Factor, LowFreqFactor, HighFreqFactor float64 // factor, low_freq_factor, high_freq_factor
	OriginalMaxPositions                  int     // original_max_position_embeddings
	// Divisors are Type RopeFreqs' divisor of each rotary frequency
	// (HeadDim/2 of them), as a GGUF file's rope_freqs.weight holds them:
	// all a GGUF file keeps of llama3 scaling, whose parameters are not
	// in its metadata; llama.cpp divides by them as RopeInvFreq does.
	Divisors []float32
}

// RopeFreqs is the Type of a RopeScaling read from a GGUF file's
// rope_freqs.weight: its Divisors.
const RopeFreqs = "rope_freqs"

// modelTypeNamed returns the row of modelTypes for mt.
func modelTypeNamed(mt string) (*modelType, bool) {
	for i := range modelTypes {
		if modelTypes[i].name == mt {
			return &modelTypes[i], true
		}
	}
	return nil, false
}

// supportedTypes lists modelTypes' names, sorted, for error messages.
func supportedTypes() string {
	var ts []string
	for _, t := range modelTypes {
		ts = append(ts, t.name)
	}
	slices.Sort(ts)
	return strings.Join(ts, ", ")
}

// quoted is s in double quotes for a message, escaped and bounded
// (termsafe.Short): a config's strings may hold anything.
func quoted(s string) string { return `"` + termsafe.Short(s) + `"` }

// object is one JSON object with its values still raw, so that each field
// is read with the type it must have and its absence (or null) is seen.
type object map[string]json.RawMessage

// raw returns key's value, or nil when the key is absent or null.
func (o object) raw(key string) json.RawMessage {
	v, ok := o[key]
	if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil
	}
	return v
}

// has reports whether key is present and not null.
func (o object) has(key string) bool { return o.raw(key) != nil }

// absent reports whether key is not in the object at all: transformers
// then takes its config class's default, where a null passes None.
func (o object) absent(key string) bool {
	_, ok := o[key]
	return !ok
}

// intField reads key as an integer: def when absent or null. A number
// with a fraction or exponent, or a value beyond int64, is an error.
func (o object) intField(key string, def int) (int, error) {
	v := o.raw(key)
	if v == nil {
		return def, nil
	}
	var n json.Number // which would also take a quoted number: refuse those first
	if v = bytes.TrimSpace(v); v[0] == '"' {
		return 0, fmt.Errorf("%s must be an integer, got %s", key, termsafe.Short(string(v)))
	}
	if err := json.Unmarshal(v, &n); err != nil {
		return 0, fmt.Errorf("%s must be an integer, got %s", key, termsafe.Short(string(v)))
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || int64(int(i)) != i {
		return 0, fmt.Errorf("%s must be an integer, got %s", key, termsafe.Short(n.String()))
	}
	return int(i), nil
}

// floatField reads key as a finite number: def when absent or null.
func (o object) floatField(key string, def float64) (float64, error) {
	v := o.raw(key)
	if v == nil {
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%s must be a number, got %s", key, termsafe.Short(string(v)))
	}
	return f, nil
}

// boolField reads key as a boolean: def when absent or null.
func (o object) boolField(key string, def bool) (bool, error) {
	v := o.raw(key)
	if v == nil {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, fmt.Errorf("%s must be true or false, got %s", key, termsafe.Short(string(v)))
	}
	return b, nil
}

// stringField reads key as a string: def when absent or null.
func (o object) stringField(key, def string) (string, error) {
	v := o.raw(key)
	if v == nil {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("%s must be a string, got %s", key, termsafe.Short(string(v)))
	}
	return s, nil
}

// reader reads fields of one object in turn and keeps the first error, so
// that a parser reads as a list of fields. It notes the defaults it takes
// that Config.Defaulted lists.
type reader struct {
	o         object
	err       error
	defaulted []string
}

func (r *reader) int(key string, def int) int {
	v, err := r.o.intField(key, def)
	r.keep(err)
	return v
}

// size reads a size: def, noted, when the file leaves key out, as
// transformers' config class fills it in; a null is refused (transformers
// would build with None).
func (r *reader) size(key string, def int) int {
	if r.err != nil {
		return 0
	}
	if r.o.absent(key) {
		r.note(key, def)
		return def
	}
	if !r.o.has(key) {
		r.keep(fmt.Errorf("%s is null: it must be given, or left out for transformers' default %d", key, def))
		return 0
	}
	return r.int(key, 0)
}

// note records that key took transformers' default v.
func (r *reader) note(key string, v int) {
	r.defaulted = append(r.defaulted, fmt.Sprintf("%s %d", key, v))
}

func (r *reader) float(key string, def float64) float64 {
	v, err := r.o.floatField(key, def)
	r.keep(err)
	return v
}

func (r *reader) bool(key string, def bool) bool {
	v, err := r.o.boolField(key, def)
	r.keep(err)
	return v
}

func (r *reader) string(key, def string) string {
	v, err := r.o.stringField(key, def)
	r.keep(err)
	return v
}

func (r *reader) keep(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Parse reads one config.json and returns its Config, validated. Fields
// that do not change the computation (torch_dtype, token ids,
// architectures, use_cache, initializer_range…) are ignored; fields that
// change it in ways gpuz does not build are refused; a size the file
// leaves out takes the default of transformers' config class for its
// model_type (Config.Defaulted lists them). Errors are one line and name
// the field as the file spells it.
func Parse(data []byte) (Config, error) {
	var o object
	if err := json.Unmarshal(data, &o); err != nil {
		return Config{}, fmt.Errorf("malformed JSON: %v", err)
	}
	if o == nil {
		return Config{}, fmt.Errorf("malformed JSON: not an object")
	}
	mt, err := o.stringField("model_type", "")
	if err != nil {
		return Config{}, err
	}
	if mt == "" {
		return Config{}, fmt.Errorf("model_type is missing (supported: %s)", supportedTypes())
	}
	t, ok := modelTypeNamed(mt)
	if !ok {
		return Config{}, fmt.Errorf("model_type %s is not supported (supported: %s)", quoted(mt), supportedTypes())
	}
	c, err := t.parse(o)
	if err != nil {
		return Config{}, err
	}
	c.ModelType, c.Arch = mt, t.arch
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parse reads a config.json of model_type t: the keys its Arch names,
// with t's defaults.
func (t *modelType) parse(o object) (Config, error) {
	a, k := t.arch, t.arch.keys
	r := &reader{o: o}
	var c Config
	c.Vocab = r.size(k.vocab, t.sizes.vocab)
	c.MaxPositions = r.size(k.maxPos, t.sizes.maxPos)
	c.Hidden = r.size(k.hidden, t.sizes.hidden)
	if a.innerFromHidden == 0 {
		c.Intermediate = r.size(k.intermediate, t.sizes.intermediate)
	} else {
		c.Intermediate = r.int(k.intermediate, 0)
	}
	c.Layers = r.size(k.layers, t.sizes.layers)
	c.Heads = r.size(k.heads, t.sizes.heads)
	c.KVHeads = c.Heads
	if k.kvHeads != "" {
		c.KVHeads = r.int(k.kvHeads, c.Heads) // null: the heads, as transformers' None
		if r.o.absent(k.kvHeads) && t.kvHeads != 0 {
			c.KVHeads = t.kvHeads
			r.note(k.kvHeads, t.kvHeads)
		}
	}
	c.NormEps = r.float(k.eps, t.eps)
	c.TieEmbeddings = r.bool(k.tie, t.tie)
	if a.Positions == Rotary {
		c.RopeTheta = r.float(k.ropeTheta, t.ropeTheta)
	}
	var dropouts []string
	for _, key := range a.dropoutKeys {
		p := r.float(key, a.dropoutDefault)
		if r.err == nil && !(p >= 0 && p <= 1) {
			// transformers' nn.Dropout refuses it as the model is built.
			return Config{}, fmt.Errorf("%s must be a probability from 0 to 1, got %g", key, p)
		}
		if p > 0 {
			dropouts = append(dropouts, fmt.Sprintf("%s %g", key, p))
		}
		c.Dropout = max(c.Dropout, p)
	}
	c.Dropouts = strings.Join(dropouts, ", ")
	act := r.string(a.act.key, a.act.def)
	c.QKVBias, c.OutBias, c.MLPBias = r.bias(t.qkvBias), r.bias(t.outBias), r.bias(t.mlpBias)
	c.SlidingWindow = r.window(t.window, c.Layers)
	for _, f := range a.fixed {
		if v := r.bool(f.key, f.want); r.err == nil && v != f.want {
			return Config{}, fmt.Errorf("%s %v is not supported: gpuz builds %s with %s %v", f.key, v, a.Name, f.key, f.want)
		}
	}
	for _, key := range a.positive {
		if r.int(key, 1) < 1 && r.err == nil {
			return Config{}, fmt.Errorf("%s must be positive", key)
		}
	}
	if r.err != nil {
		return Config{}, r.err
	}
	if err := a.act.check(act); err != nil {
		return Config{}, err
	}
	c.Act = a.Act
	if a.innerFromHidden != 0 && !o.has(k.intermediate) {
		if c.Hidden > math.MaxInt64/a.innerFromHidden {
			return Config{}, fmt.Errorf("%s %d is too large: %d·%s overflows int64", k.hidden, c.Hidden, a.innerFromHidden, k.hidden)
		}
		c.Intermediate = a.innerFromHidden * c.Hidden
	}
	if k.headDim != "" && o.has(k.headDim) {
		hd, err := o.intField(k.headDim, 0)
		if err != nil {
			return Config{}, err
		}
		c.HeadDim = hd
	} else {
		if c.Heads <= 0 {
			return Config{}, fmt.Errorf("%s must be positive, got %d", k.heads, c.Heads)
		}
		if c.Hidden%c.Heads != 0 {
			also := ""
			if k.headDim != "" {
				also = fmt.Sprintf(" (and %s is absent)", k.headDim)
			}
			return Config{}, fmt.Errorf("%s %d does not divide %s %d%s", k.heads, c.Heads, k.hidden, c.Hidden, also)
		}
		c.HeadDim = c.Hidden / c.Heads
	}
	if a.Positions == Rotary {
		rs, err := parseRopeScaling(o.raw(k.ropeScaling))
		if err != nil {
			return Config{}, err
		}
		c.RopeScaling = rs
	}
	c.Defaulted = strings.Join(r.defaulted, ", ")
	return c, nil
}

// bias reads a projection's bias as rule gives it.
func (r *reader) bias(rule biasRule) bool {
	if rule.key == "" {
		return rule.always
	}
	return r.bool(rule.key, false)
}

// window reads a model_type's sliding window as w gives it for a model of
// layers layers: 0 when none is in effect. A size the file leaves out is
// w's default (noted when it is in effect); a null one is none.
func (r *reader) window(w windowRule, layers int) int {
	if w.key == "" {
		return 0
	}
	on := w.enable == "" || r.bool(w.enable, false)
	size := r.int(w.key, 0)
	if on && w.fullLayers != "" {
		full := r.int(w.fullLayers, w.fullLayersDefault)
		if r.o.absent(w.fullLayers) {
			r.note(w.fullLayers, full)
		}
		on = full < layers
	}
	if !on {
		return 0
	}
	if r.o.absent(w.key) {
		size = w.def
		r.note(w.key, size)
	}
	return size
}

// check refuses an activation the file names that gpuz does not build.
func (k actKey) check(act string) error {
	supported := strings.Join(k.supported, ", ")
	if why, ok := k.refused[act]; ok {
		return fmt.Errorf("%s %s %s (supported: %s)", k.key, quoted(act), why, supported)
	}
	if !slices.Contains(k.supported, act) {
		return fmt.Errorf("%s %s is not supported (supported: %s)", k.key, quoted(act), supported)
	}
	return nil
}

// parseRopeScaling reads rope_scaling (nil when absent or null). The type
// is "rope_type" in newer files and "type" in older ones.
func parseRopeScaling(v json.RawMessage) (*RopeScaling, error) {
	if v == nil {
		return nil, nil
	}
	var o object
	if err := json.Unmarshal(v, &o); err != nil || o == nil {
		return nil, fmt.Errorf("rope_scaling must be an object or null, got %s", termsafe.Short(string(v)))
	}
	r := &reader{o: o}
	typ := r.string("rope_type", "")
	if typ == "" {
		typ = r.string("type", "")
	}
	if r.err != nil {
		return nil, fmt.Errorf("rope_scaling: %v", r.err)
	}
	switch typ {
	case "default":
		return nil, nil // transformers' name for no scaling
	case "llama3":
	case "":
		return nil, fmt.Errorf("rope_scaling has no rope_type (supported: llama3)")
	default:
		return nil, fmt.Errorf("rope_scaling of rope_type %s is not supported (supported: llama3)", quoted(typ))
	}
	s := &RopeScaling{Type: typ}
	for _, k := range []string{"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"} {
		if !o.has(k) {
			return nil, fmt.Errorf("rope_scaling.%s is missing (rope_type llama3 needs it)", k)
		}
	}
	s.Factor = r.float("factor", 0)
	s.LowFreqFactor = r.float("low_freq_factor", 0)
	s.HighFreqFactor = r.float("high_freq_factor", 0)
	s.OriginalMaxPositions = r.int("original_max_position_embeddings", 0)
	if r.err != nil {
		return nil, fmt.Errorf("rope_scaling.%v", r.err)
	}
	return s, nil
}

// Validate checks what gpuz needs of a Config, however it was made: sizes
// positive and within bounds, heads that divide, an activation of the
// architecture, RoPE parameters that make sense, and parameter counts that
// fit int64. Errors are one line and name the field as a config.json of
// the Config's architecture spells it.
func (c Config) Validate() error {
	a := c.Arch
	if a == nil {
		var names []string
		for _, a := range archs {
			names = append(names, a.Name)
		}
		return fmt.Errorf("architecture \"\" is not supported (supported: %s)", strings.Join(names, ", "))
	}
	k := a.keys
	kv, hd := a.kvKeys()
	for _, f := range []struct {
		key string
		v   int
	}{
		{k.vocab, c.Vocab}, {k.maxPos, c.MaxPositions}, {k.hidden, c.Hidden},
		{k.intermediate, c.Intermediate}, {k.layers, c.Layers}, {k.heads, c.Heads},
		{kv, c.KVHeads}, {hd, c.HeadDim},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", f.key, f.v)
		}
	}
	if c.Vocab > MaxVocab {
		return fmt.Errorf("%s %d is beyond 2^24 = %d: token ids must be exact in float32", k.vocab, c.Vocab, MaxVocab)
	}
	if c.Layers > MaxLayers {
		return fmt.Errorf("%s %d is beyond %d", k.layers, c.Layers, MaxLayers)
	}
	if c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("%s %d does not divide %s %d", kv, c.KVHeads, k.heads, c.Heads)
	}
	if !(c.NormEps > 0) || math.IsInf(c.NormEps, 0) {
		return fmt.Errorf("%s must be positive, got %g", k.eps, c.NormEps)
	}
	if !(c.Dropout >= 0 && c.Dropout <= 1) {
		return fmt.Errorf("dropout probability %g is outside [0, 1]", c.Dropout)
	}
	if c.SlidingWindow < 0 {
		return fmt.Errorf("sliding_window must not be negative, got %d", c.SlidingWindow)
	}
	if c.Act != a.Act {
		return fmt.Errorf("%s %s is not supported (supported: %s)", a.act.key, quoted(c.Act), strings.Join(a.act.supported, ", "))
	}
	if k.kvHeads == "" && (c.KVHeads != c.Heads || c.HeadDim*c.Heads != c.Hidden) {
		return fmt.Errorf("%s %d and %s %d do not agree with %d key-value heads of %d", k.heads, c.Heads, k.hidden, c.Hidden, c.KVHeads, c.HeadDim)
	}
	if a.Biases == AllBiases && (c.QKVBias || c.OutBias || c.MLPBias) {
		return fmt.Errorf("%s's biases are always there: QKVBias, OutBias and MLPBias must be false", a.Name)
	}
	switch a.Positions {
	case Learned:
		if c.RopeScaling != nil {
			return fmt.Errorf("rope_scaling is not a %s field", a.Name)
		}
	case Rotary:
		if c.HeadDim%2 != 0 {
			return fmt.Errorf("%s %d is odd: rotary embeddings pair its halves", hd, c.HeadDim)
		}
		if !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
			return fmt.Errorf("%s must be positive, got %g", k.ropeTheta, c.RopeTheta)
		}
		if err := c.RopeScaling.validate(); err != nil {
			return err
		}
		if s := c.RopeScaling; s != nil && s.Type == RopeFreqs && len(s.Divisors) != c.HeadDim/2 {
			return fmt.Errorf("rope_freqs.weight has %d divisors, want one per rotary frequency, %d", len(s.Divisors), c.HeadDim/2)
		}
	}
	if _, err := c.paramCount(); err != nil {
		return err
	}
	return nil
}

// kvKeys returns how a config.json of a names the key-value heads and the
// head width, for messages: GPT-2 has neither key, and both follow from
// its heads and width.
func (a *Arch) kvKeys() (kv, hd string) {
	if a.keys.kvHeads == "" {
		return a.keys.heads, a.keys.hidden + "/" + a.keys.heads
	}
	return a.keys.kvHeads, a.keys.headDim
}

// validate checks llama3 scaling's parameters as transformers'
// _validate_llama3_parameters does (a nil scaling is valid).
func (s *RopeScaling) validate() error {
	if s == nil {
		return nil
	}
	if s.Type == RopeFreqs {
		for i, d := range s.Divisors {
			if !(d > 0) || math.IsInf(float64(d), 0) {
				return fmt.Errorf("rope_freqs.weight[%d] must be a positive divisor, got %g", i, d)
			}
		}
		return nil
	}
	if s.Type != "llama3" {
		return fmt.Errorf("rope_scaling of rope_type %s is not supported (supported: llama3)", quoted(s.Type))
	}
	if !(s.Factor >= 1) || math.IsInf(s.Factor, 0) {
		return fmt.Errorf("rope_scaling.factor must be at least 1, got %g", s.Factor)
	}
	if !(s.LowFreqFactor > 0) || math.IsInf(s.LowFreqFactor, 0) {
		return fmt.Errorf("rope_scaling.low_freq_factor must be positive, got %g", s.LowFreqFactor)
	}
	if !(s.HighFreqFactor > s.LowFreqFactor) || math.IsInf(s.HighFreqFactor, 0) {
		return fmt.Errorf("rope_scaling.high_freq_factor %g must be greater than low_freq_factor %g", s.HighFreqFactor, s.LowFreqFactor)
	}
	if s.OriginalMaxPositions <= 0 {
		return fmt.Errorf("rope_scaling.original_max_position_embeddings must be positive, got %d", s.OriginalMaxPositions)
	}
	return nil
}
