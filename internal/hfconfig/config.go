// Package hfconfig reads Hugging Face decoder configurations (config.json
// of the Llama family and GPT-2), checks that gpuz can build the
// computation they describe, names and shapes their parameters as
// transformers does, carries a few published configurations as presets,
// and checks a snapshot's safetensors headers against the configuration.
// It imports nothing of gpuz's: package models builds the graph from a
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
)

// Arch is the computation a config describes.
type Arch string

const (
	// ArchLlama is model_type llama, mistral or qwen2: RMSNorm, rotary
	// position embeddings, a SwiGLU MLP and grouped-query attention.
	ArchLlama Arch = "llama"
	// ArchGPT2 is model_type gpt2: LayerNorm, learned positions, GELU in
	// its tanh form and Conv1D weights stored [in, out].
	ArchGPT2 Arch = "gpt2"
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
	Arch          Arch         // the computation
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
}

// RopeScaling is rope_scaling; Type "llama3" is the one implemented.
type RopeScaling struct {
	Type                                  string  // rope_type (or the older key type)
	Factor, LowFreqFactor, HighFreqFactor float64 // factor, low_freq_factor, high_freq_factor
	OriginalMaxPositions                  int     // original_max_position_embeddings
}

// keys are the names a config.json of one Arch gives the sizes, for error
// messages: the fields as the file spells them.
type keys struct {
	hidden, intermediate, layers, heads, maxPos, eps string
}

// keysOf returns the file's names of the sizes for arch.
func keysOf(arch Arch) keys {
	if arch == ArchGPT2 {
		return keys{"n_embd", "n_inner", "n_layer", "n_head", "n_positions", "layer_norm_epsilon"}
	}
	return keys{"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "max_position_embeddings", "rms_norm_eps"}
}

// archOf maps the model types gpuz builds to their computation.
var archOf = map[string]Arch{
	"llama":   ArchLlama,
	"mistral": ArchLlama,
	"qwen2":   ArchLlama,
	"gpt2":    ArchGPT2,
}

// supportedTypes lists archOf's model types, sorted, for error messages.
func supportedTypes() string {
	var ts []string
	for t := range archOf {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return strings.Join(ts, ", ")
}

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

// intField reads key as an integer: def when absent or null. A number
// with a fraction or exponent, or a value beyond int64, is an error.
func (o object) intField(key string, def int) (int, error) {
	v := o.raw(key)
	if v == nil {
		return def, nil
	}
	var n json.Number // which would also take a quoted number: refuse those first
	if v = bytes.TrimSpace(v); v[0] == '"' {
		return 0, fmt.Errorf("%s must be an integer, got %s", key, v)
	}
	if err := json.Unmarshal(v, &n); err != nil {
		return 0, fmt.Errorf("%s must be an integer, got %s", key, v)
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || int64(int(i)) != i {
		return 0, fmt.Errorf("%s must be an integer, got %s", key, n)
	}
	return int(i), nil
}

// requiredInt reads key as an integer that the file must give.
func (o object) requiredInt(key string) (int, error) {
	if !o.has(key) {
		return 0, fmt.Errorf("%s is missing", key)
	}
	return o.intField(key, 0)
}

// floatField reads key as a finite number: def when absent or null.
func (o object) floatField(key string, def float64) (float64, error) {
	v := o.raw(key)
	if v == nil {
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%s must be a number, got %s", key, v)
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
		return false, fmt.Errorf("%s must be true or false, got %s", key, v)
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
		return "", fmt.Errorf("%s must be a string, got %s", key, v)
	}
	return s, nil
}

// reader reads fields of one object in turn and keeps the first error, so
// that a parser reads as a list of fields.
type reader struct {
	o   object
	err error
}

func (r *reader) int(key string, def int) int {
	v, err := r.o.intField(key, def)
	r.keep(err)
	return v
}

func (r *reader) required(key string) int {
	if r.err != nil {
		return 0
	}
	v, err := r.o.requiredInt(key)
	r.keep(err)
	return v
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
// change it in ways gpuz does not build are refused. Errors are one line
// and name the field as the file spells it.
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
	arch, ok := archOf[mt]
	if !ok {
		return Config{}, fmt.Errorf("model_type %q is not supported (supported: %s)", mt, supportedTypes())
	}
	var c Config
	if arch == ArchGPT2 {
		c, err = parseGPT2(o)
	} else {
		c, err = parseLlama(o, mt)
	}
	if err != nil {
		return Config{}, err
	}
	c.ModelType, c.Arch = mt, arch
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parseGPT2 reads a gpt2 config.json.
func parseGPT2(o object) (Config, error) {
	r := &reader{o: o}
	var c Config
	c.Vocab = r.required("vocab_size")
	c.MaxPositions = r.required("n_positions")
	c.Hidden = r.required("n_embd")
	c.Layers = r.required("n_layer")
	c.Heads = r.required("n_head")
	c.Intermediate = r.int("n_inner", 0)
	c.NormEps = r.float("layer_norm_epsilon", 1e-5)
	c.TieEmbeddings = r.bool("tie_word_embeddings", true)
	act := r.string("activation_function", "gelu_new")
	for _, k := range []string{"resid_pdrop", "embd_pdrop", "attn_pdrop"} {
		c.Dropout = max(c.Dropout, r.float(k, 0.1))
	}
	// Flags that change the computation, with the value gpuz builds.
	for _, f := range []struct {
		key  string
		want bool
	}{
		{"scale_attn_weights", true},
		{"scale_attn_by_inverse_layer_idx", false},
		{"reorder_and_upcast_attn", false},
		{"add_cross_attention", false},
	} {
		if v := r.bool(f.key, f.want); r.err == nil && v != f.want {
			return Config{}, fmt.Errorf("%s %v is not supported: gpuz builds GPT-2 with %s %v", f.key, v, f.key, f.want)
		}
	}
	if r.err != nil {
		return Config{}, r.err
	}
	switch act {
	case "gelu_new", "gelu_pytorch_tanh":
		c.Act = ActGELUTanh
	case "gelu":
		return Config{}, fmt.Errorf("activation_function %q is GELU's erf form, which gpuz does not build (supported: gelu_new, gelu_pytorch_tanh)", act)
	default:
		return Config{}, fmt.Errorf("activation_function %q is not supported (supported: gelu_new, gelu_pytorch_tanh)", act)
	}
	if !o.has("n_inner") {
		if c.Hidden > math.MaxInt64/4 {
			return Config{}, fmt.Errorf("n_embd %d is too large: 4·n_embd overflows int64", c.Hidden)
		}
		c.Intermediate = 4 * c.Hidden
	}
	if c.Heads <= 0 {
		return Config{}, fmt.Errorf("n_head must be positive, got %d", c.Heads)
	}
	if c.Hidden%c.Heads != 0 {
		return Config{}, fmt.Errorf("n_head %d does not divide n_embd %d", c.Heads, c.Hidden)
	}
	c.KVHeads, c.HeadDim = c.Heads, c.Hidden/c.Heads
	return c, nil
}

// parseLlama reads a llama, mistral or qwen2 config.json.
func parseLlama(o object, mt string) (Config, error) {
	r := &reader{o: o}
	var c Config
	c.Vocab = r.required("vocab_size")
	c.MaxPositions = r.required("max_position_embeddings")
	c.Hidden = r.required("hidden_size")
	c.Intermediate = r.required("intermediate_size")
	c.Layers = r.required("num_hidden_layers")
	c.Heads = r.required("num_attention_heads")
	c.KVHeads = r.int("num_key_value_heads", c.Heads)
	c.NormEps = r.float("rms_norm_eps", 1e-6)
	c.RopeTheta = r.float("rope_theta", 10000)
	c.TieEmbeddings = r.bool("tie_word_embeddings", false)
	c.Dropout = r.float("attention_dropout", 0)
	act := r.string("hidden_act", "silu")
	switch mt {
	case "qwen2":
		c.QKVBias = true
		window := r.int("sliding_window", 0)
		if r.bool("use_sliding_window", false) && r.int("max_window_layers", c.Layers) < c.Layers {
			c.SlidingWindow = window
		}
	case "mistral":
		c.QKVBias = r.bool("attention_bias", false)
		c.OutBias = c.QKVBias
		c.SlidingWindow = r.int("sliding_window", 0)
	default:
		c.QKVBias = r.bool("attention_bias", false)
		c.OutBias = c.QKVBias
		c.MLPBias = r.bool("mlp_bias", false)
	}
	if r.int("pretraining_tp", 1) < 1 && r.err == nil {
		return Config{}, fmt.Errorf("pretraining_tp must be positive")
	}
	if r.err != nil {
		return Config{}, r.err
	}
	if act != "silu" {
		return Config{}, fmt.Errorf("hidden_act %q is not supported (supported: silu)", act)
	}
	c.Act = ActSiLU
	if o.has("head_dim") {
		hd, err := o.intField("head_dim", 0)
		if err != nil {
			return Config{}, err
		}
		c.HeadDim = hd
	} else {
		if c.Heads <= 0 {
			return Config{}, fmt.Errorf("num_attention_heads must be positive, got %d", c.Heads)
		}
		if c.Hidden%c.Heads != 0 {
			return Config{}, fmt.Errorf("num_attention_heads %d does not divide hidden_size %d (and head_dim is absent)", c.Heads, c.Hidden)
		}
		c.HeadDim = c.Hidden / c.Heads
	}
	rs, err := parseRopeScaling(o.raw("rope_scaling"))
	if err != nil {
		return Config{}, err
	}
	c.RopeScaling = rs
	return c, nil
}

// parseRopeScaling reads rope_scaling (nil when absent or null). The type
// is "rope_type" in newer files and "type" in older ones.
func parseRopeScaling(v json.RawMessage) (*RopeScaling, error) {
	if v == nil {
		return nil, nil
	}
	var o object
	if err := json.Unmarshal(v, &o); err != nil || o == nil {
		return nil, fmt.Errorf("rope_scaling must be an object or null, got %s", v)
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
		return nil, fmt.Errorf("rope_scaling of rope_type %q is not supported (supported: llama3)", typ)
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
	if c.Arch != ArchLlama && c.Arch != ArchGPT2 {
		return fmt.Errorf("architecture %q is not supported (supported: %s, %s)", c.Arch, ArchLlama, ArchGPT2)
	}
	k := keysOf(c.Arch)
	kv, hd := "num_key_value_heads", "head_dim"
	if c.Arch == ArchGPT2 {
		kv, hd = k.heads, k.hidden+"/"+k.heads
	}
	for _, f := range []struct {
		key string
		v   int
	}{
		{"vocab_size", c.Vocab}, {k.maxPos, c.MaxPositions}, {k.hidden, c.Hidden},
		{k.intermediate, c.Intermediate}, {k.layers, c.Layers}, {k.heads, c.Heads},
		{kv, c.KVHeads}, {hd, c.HeadDim},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", f.key, f.v)
		}
	}
	if c.Vocab > MaxVocab {
		return fmt.Errorf("vocab_size %d is beyond 2^24 = %d: token ids must be exact in float32", c.Vocab, MaxVocab)
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
	switch c.Arch {
	case ArchGPT2:
		if c.Act != ActGELUTanh {
			return fmt.Errorf("activation_function %q is not supported (supported: gelu_new, gelu_pytorch_tanh)", c.Act)
		}
		if c.KVHeads != c.Heads || c.HeadDim*c.Heads != c.Hidden {
			return fmt.Errorf("n_head %d and n_embd %d do not agree with %d key-value heads of %d", c.Heads, c.Hidden, c.KVHeads, c.HeadDim)
		}
		if c.RopeScaling != nil {
			return fmt.Errorf("rope_scaling is not a GPT-2 field")
		}
		if c.QKVBias || c.OutBias || c.MLPBias {
			return fmt.Errorf("GPT-2's biases are always there: QKVBias, OutBias and MLPBias must be false")
		}
	case ArchLlama:
		if c.Act != ActSiLU {
			return fmt.Errorf("hidden_act %q is not supported (supported: silu)", c.Act)
		}
		if c.HeadDim%2 != 0 {
			return fmt.Errorf("head_dim %d is odd: rotary embeddings pair its halves", c.HeadDim)
		}
		if !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
			return fmt.Errorf("rope_theta must be positive, got %g", c.RopeTheta)
		}
		if err := c.RopeScaling.validate(); err != nil {
			return err
		}
	}
	if _, err := c.paramCount(); err != nil {
		return err
	}
	return nil
}

// validate checks llama3 scaling's parameters as transformers'
// _validate_llama3_parameters does (a nil scaling is valid).
func (s *RopeScaling) validate() error {
	if s == nil {
		return nil
	}
	if s.Type != "llama3" {
		return fmt.Errorf("rope_scaling of rope_type %q is not supported (supported: llama3)", s.Type)
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
