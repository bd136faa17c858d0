package gguf

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"gpuz/internal/hfconfig"
)

// Llama is a model of the Llama family (RMSNorm, rotary positions, a
// SwiGLU MLP, nn.Linear weights: model_type llama, mistral and qwen2) as
// llama.cpp's llama architecture names it: its metadata (llama.*), a
// vocabulary of synthetic tokens that llama.cpp accepts (tokenizer.ggml.*:
// the model is fed token ids, not text), and its tensors (token_embd,
// blk.N.attn_q…, output), written from gpuz's parameters (LlamaWriter).
//
// As llama.cpp's convert_hf_to_gguf.py does, the queries' and keys'
// weight rows (and biases) are permuted within each head: transformers
// rotates a head's halves (x[j], x[j+d/2]), llama.cpp's llama
// architecture adjacent pairs (x[2j], x[2j+1]), so the rows of pair j are
// moved next to each other. Frequencies that a rope scaling changes
// (llama3's) are written as rope_freqs.weight, each base frequency's
// divisor, as the converter does. Matrices are of Type; vectors (the
// norms, the biases, rope_freqs) are F32, as the converter keeps them.
// With Weights a block type, the projections and the token embedding are
// quantized to it, as llama.cpp's quantizer does (the queries' and keys'
// rows permuted first, then each row quantized), and the output head,
// when untied, stays of Type.
type Llama struct {
	// Config is the model's configuration; Layers how many of its
	// decoder layers are written (the first ones), as --layers builds.
	Config hfconfig.Config
	Layers int
	// Name is general.name.
	Name string
	// Type is the matrices' type: F16 or F32.
	Type Type
	// Weights, when it is a block type (Q8_0, Q4_0, Q4_K, Q6_K), is the type
	// of the projections and the token embedding, each of whose rows
	// must then be a whole number of its blocks; F32, the zero value,
	// leaves them of Type.
	Weights Type
	// Types, when not nil, gives the named matrices (GGUF names:
	// "blk.0.ffn_down.weight", "output.weight") another type, a float or
	// a block type: llama.cpp's mixes, such as Q4_K_M's Q6_K attn_v,
	// ffn_down and output among Q4_K projections.
	Types map[string]Type
}

// Check reports the first thing llama.cpp's llama architecture does not
// compute as gpuz does, or a size it cannot hold.
func (l Llama) Check() error {
	c := l.Config
	a := c.Arch
	switch {
	case a == nil:
		return errors.New("no model configuration")
	case a.Norm != hfconfig.RMSNorm || a.Positions != hfconfig.Rotary || a.MLP != hfconfig.GatedSiLU || a.Weights != hfconfig.LinearWeights:
		return fmt.Errorf("GGUF export writes the Llama family (llama, mistral, qwen2), not %s (%s)", a.Name, c.ModelType)
	case c.MLPBias:
		return fmt.Errorf("GGUF's llama architecture has no MLP biases (mlp_bias)")
	case l.Layers < 1 || l.Layers > c.Layers:
		return fmt.Errorf("%d layers: want 1 to the model's %d", l.Layers, c.Layers)
	case c.Vocab < 3:
		return fmt.Errorf("a vocabulary of %d tokens: GGUF's llama vocabulary needs at least 3 (unknown, beginning and end)", c.Vocab)
	case c.HeadDim%2 != 0:
		return fmt.Errorf("an odd head dimension (%d) has no rotary pairs", c.HeadDim)
	case l.Type != F16 && l.Type != F32:
		return fmt.Errorf("type %v: want F16 or F32", l.Type)
	case l.Weights != F32 && !l.Weights.Quantized():
		return fmt.Errorf("weights of type %v: want Q8_0, Q4_0, Q4_K or Q6_K (or F32 for the matrices' type)", l.Weights)
	}
	tensors, _ := l.layout()
	matrices := map[string]bool{}
	for _, t := range tensors {
		matrices[t.Name] = len(t.Dims) == 2
		if _, ok := t.Type.kind(); !ok {
			return fmt.Errorf("%s: type %v is not one this package writes", t.Name, t.Type)
		}
		if k, _ := t.Type.kind(); t.Type.Quantized() {
			if err := k.CheckShape(t.shape()); err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(l.Types)) {
		if !matrices[name] {
			return fmt.Errorf("types: %s is not a matrix of the file", name)
		}
	}
	return nil
}

// FileType is general.file_type: llama.cpp's LLAMA_FTYPE of the
// projections' type (for Q4_K, MOSTLY_Q4_K_S, the name llama.cpp's
// quantizer gives a file whose projections are all Q4_K; for Q6_K,
// MOSTLY_Q6_K).
func (l Llama) FileType() uint32 {
	switch {
	case l.Weights == Q8_0:
		return 7 // LLAMA_FTYPE_MOSTLY_Q8_0
	case l.Weights == Q4_0:
		return 2 // LLAMA_FTYPE_MOSTLY_Q4_0
	case l.Weights == Q4_K:
		return 14 // LLAMA_FTYPE_MOSTLY_Q4_K_S
	case l.Weights == Q6_K:
		return 18 // LLAMA_FTYPE_MOSTLY_Q6_K
	case l.Type == F16:
		return 1 // LLAMA_FTYPE_MOSTLY_F16
	}
	return 0 // LLAMA_FTYPE_ALL_F32
}

// weights is the projections' and the token embedding's type: Weights
// when it is a block type, Type otherwise.
func (l Llama) weights() Type {
	if l.Weights.Quantized() {
		return l.Weights
	}
	return l.Type
}

// Metadata is the file's metadata: general.*, llama.* and the
// vocabulary's tokenizer.ggml.*.
func (l Llama) Metadata() []KV {
	c := l.Config
	u := func(n int) uint32 { return uint32(n) }
	meta := []KV{
		{"general.architecture", "llama"},
		{"general.name", l.Name},
		{"general.file_type", l.FileType()},
		{"llama.vocab_size", u(c.Vocab)},
		{"llama.context_length", u(c.MaxPositions)},
		{"llama.embedding_length", u(c.Hidden)},
		{"llama.block_count", u(l.Layers)},
		{"llama.feed_forward_length", u(c.Intermediate)},
		{"llama.attention.head_count", u(c.Heads)},
		{"llama.attention.head_count_kv", u(c.KVHeads)},
		{"llama.attention.key_length", u(c.HeadDim)},
		{"llama.attention.value_length", u(c.HeadDim)},
		{"llama.rope.dimension_count", u(c.HeadDim)},
		{"llama.rope.freq_base", float32(c.RopeTheta)},
		{"llama.attention.layer_norm_rms_epsilon", float32(c.NormEps)},
	}
	return append(meta, l.vocabulary()...)
}

// vocabulary is a sentencepiece ("llama") vocabulary of Vocab synthetic
// tokens: 0 unknown, 1 and 2 the beginning and end of a sequence
// (control tokens), the others "t<id>", normal tokens scored −id. No
// token begins a sequence by itself (add_bos_token false): the ids fed
// are the model's whole input.
func (l Llama) vocabulary() []KV {
	n := l.Config.Vocab
	tokens, scores, types := make([]string, n), make([]float32, n), make([]int32, n)
	for i := range n {
		tokens[i], scores[i], types[i] = "t"+strconv.Itoa(i), -float32(i), 1 // normal
	}
	tokens[0], types[0] = "<unk>", 2 // unknown
	tokens[1], types[1] = "<s>", 3   // control
	tokens[2], types[2] = "</s>", 3
	for b := range min(256, n-3) {
		tokens[3+b], types[3+b] = fmt.Sprintf("<0x%02X>", b), 6 // byte
	}
	return []KV{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.add_bos_token", false},
		{"tokenizer.ggml.add_eos_token", false},
	}
}

// ropeFactors returns rope_freqs.weight (hfconfig's RopeFactors): nil
// when no frequency is scaled.
func (l Llama) ropeFactors() []float32 { return l.Config.RopeFactors() }

// piece is one GGUF tensor cut from a gpuz parameter: rows [off,
// off+rows) of it (all of it when rows is 0), each of width values, their
// order within each head permuted for llama.cpp's rotary pairs when
// permuteForRope is set.
type piece struct {
	name           string
	off, rows      int
	width          int
	permuteForRope bool
}

// layout returns the file's tensors in the order gpuz declares its
// parameters, and for each gpuz parameter's name the pieces it is cut
// into. The tensors' names are hfconfig's (Arch.GGUFName) of
// transformers' modules.
func (l Llama) layout() ([]Tensor, map[string][]piece) {
	c, a, mods := l.Config, l.Config.Arch, l.Config.Arch.Modules
	var tensors []Tensor
	params := map[string][]piece{}
	// add adds the piece of param that is transformers' tensor hf.
	add := func(param, hf string, typ Type, p piece, dims ...int) {
		name, ok := a.GGUFName(hf)
		if !ok {
			panic("gguf: no GGUF name for " + hf) // Check admits the Llama family only, which has them all
		}
		p.name = name
		d := make([]uint64, len(dims))
		for i, n := range dims {
			d[i] = uint64(n)
		}
		if t, ok := l.Types[name]; ok && len(dims) == 2 {
			typ = t
		}
		tensors = append(tensors, Tensor{Name: name, Dims: d, Type: typ})
		params[param] = append(params[param], p)
	}
	vector := func(param string, n int) { add(param, param, F32, piece{}, n) }
	// matrix adds a matrix of type typ; the projections and the
	// embedding are of l.weights(), the head of l.Type.
	matrix := func(param string, typ Type, rows, cols int) {
		add(param, param, typ, piece{width: cols}, cols, rows)
	}
	w := l.weights()
	if f := l.ropeFactors(); f != nil {
		tensors = append(tensors, Tensor{Name: "rope_freqs.weight", Dims: []uint64{uint64(len(f))}, Type: F32})
	}
	matrix(mods.Embed+".weight", w, c.Vocab, c.Hidden)
	for i := range l.Layers {
		layer := mods.Layers + strconv.Itoa(i) + "."
		vector(layer+mods.AttnNorm+".weight", c.Hidden)
		// The packed modules' parts, in their order: q, k, v; gate, up.
		qkv := c.Projection(hfconfig.QKV)
		for j, part := range qkv.Parts {
			p := piece{off: part.Off, rows: part.Width, width: qkv.In, permuteForRope: j < 2}
			add(layer+qkv.Name+".weight", layer+part.Name+".weight", w, p, qkv.In, part.Width)
		}
		if qkv.Bias {
			for j, part := range qkv.Parts {
				p := piece{off: part.Off, rows: part.Width, width: 1, permuteForRope: j < 2}
				add(layer+qkv.Name+".bias", layer+part.Name+".bias", F32, p, part.Width)
			}
		}
		out := c.Projection(hfconfig.Out)
		matrix(layer+out.Name+".weight", w, out.Out, out.In)
		if out.Bias {
			vector(layer+out.Name+".bias", out.Out)
		}
		vector(layer+mods.MLPNorm+".weight", c.Hidden)
		up := c.Projection(hfconfig.Up)
		for _, part := range up.Parts {
			add(layer+up.Name+".weight", layer+part.Name+".weight", w, piece{off: part.Off, rows: part.Width, width: up.In}, up.In, part.Width)
		}
		down := c.Projection(hfconfig.Down)
		matrix(layer+down.Name+".weight", w, down.Out, down.In)
	}
	vector(mods.FinalNorm+".weight", c.Hidden)
	if !c.TieEmbeddings {
		matrix(mods.Head+".weight", l.Type, c.Vocab, c.Hidden)
	}
	return tensors, params
}

// Tensors returns the file's tensor table (rope_freqs.weight first when
// there is one, then the parameters' tensors in the order gpuz declares
// its parameters) for a Llama that Check accepts.
func (l Llama) Tensors() []Tensor {
	tensors, _ := l.layout()
	return tensors
}

// LlamaWriter writes one Llama file as gpuz's parameters are handed to it.
type LlamaWriter struct {
	enc    *Encoder
	params map[string][]piece
	// done is the parameters written.
	done    map[string]bool
	headDim int
}

// NewWriter checks l, writes the file's header, metadata and tensor
// table to w and rope_freqs.weight when there is one, and returns the
// writer of the parameters.
func (l Llama) NewWriter(w io.Writer) (*LlamaWriter, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	tensors, params := l.layout()
	enc, err := NewEncoder(w, l.Metadata(), tensors)
	if err != nil {
		return nil, err
	}
	if f := l.ropeFactors(); f != nil {
		if err := enc.Write("rope_freqs.weight", f); err != nil {
			return nil, err
		}
	}
	return &LlamaWriter{enc: enc, params: params, done: map[string]bool{}, headDim: l.Config.HeadDim}, nil
}

// Param writes gpuz's parameter name (as package models names it, the
// Hugging Face module's name with the packed modules qkv_proj and
// gate_up_proj) of the given values, row-major in gpuz's shape.
func (lw *LlamaWriter) Param(name string, values []float32) error {
	pieces, ok := lw.params[name]
	switch {
	case !ok:
		return fmt.Errorf("gguf: parameter %s has no tensor in GGUF's llama architecture", name)
	case lw.done[name]:
		return fmt.Errorf("gguf: parameter %s given twice", name)
	}
	lw.done[name] = true
	for _, p := range pieces {
		v := values
		if p.rows > 0 {
			if (p.off+p.rows)*p.width > len(values) {
				return fmt.Errorf("gguf: parameter %s of %d values is too short for %s", name, len(values), p.name)
			}
			v = values[p.off*p.width : (p.off+p.rows)*p.width]
		}
		if p.permuteForRope {
			v = interleave(v, p.width, lw.headDim) // before the encoder quantizes the rows
		}
		if err := lw.enc.Write(p.name, v); err != nil {
			return err
		}
	}
	return nil
}

// Close checks that every parameter was written and completes the file.
func (lw *LlamaWriter) Close() error {
	for _, name := range slices.Sorted(maps.Keys(lw.params)) {
		if !lw.done[name] {
			return fmt.Errorf("gguf: parameter %s was not written", name)
		}
	}
	return lw.enc.Close()
}

// interleave returns the rows of v (each of width values) in llama.cpp's
// rotary order: transformers' row r is the file's row
// hfconfig.RopeFileRow(r, headDim).
func interleave(v []float32, width, headDim int) []float32 {
	out := make([]float32, len(v))
	for r := range len(v) / width {
		dst := hfconfig.RopeFileRow(r, headDim)
		copy(out[dst*width:(dst+1)*width], v[r*width:(r+1)*width])
	}
	return out
}
