package hfconfig

import (
	"slices"
	"strconv"
	"strings"
)

// GGUFName returns llama.cpp's name of the parameter param, named as
// transformers names it ("model.layers.3.self_attn.q_proj.weight" is
// "blk.3.attn_q.weight"); ok is false for a name the Arch has no GGUF
// name for (every name of GPT-2, which gpuz neither reads nor writes as
// GGUF). Package gguf writes by these names and LoadGGUF reads by them.
func (a *Arch) GGUFName(param string) (name string, ok bool) {
	if a == nil || a.ggufNames == nil {
		return "", false
	}
	dot := strings.LastIndexByte(param, '.')
	if dot < 0 {
		return "", false
	}
	module, suffix := param[:dot], param[dot:] // suffix ".weight" or ".bias"
	if rest, inLayer := strings.CutPrefix(module, a.Modules.Layers); inLayer {
		i := strings.IndexByte(rest, '.')
		if i <= 0 {
			return "", false
		}
		if _, err := strconv.ParseUint(rest[:i], 10, 31); err != nil {
			return "", false
		}
		base, ok := a.ggufNames[rest[i+1:]]
		if !ok {
			return "", false
		}
		return "blk." + rest[:i] + "." + base + suffix, true
	}
	base, ok := a.ggufNames[module]
	if !ok {
		return "", false
	}
	return base + suffix, true
}

// ropePermuted reports whether llama.cpp's llama architecture stores the
// rows of transformers' parameter param in its rotary order (RopeFileRow):
// the queries' and keys' weights and biases.
func (a *Arch) ropePermuted(param string) bool {
	for _, m := range []string{".self_attn.q_proj.", ".self_attn.k_proj."} {
		if strings.Contains(param, m) && strings.HasPrefix(param, a.Modules.Layers) {
			return true
		}
	}
	return false
}

// RopeFileRow returns the row of a GGUF file of llama.cpp's llama
// architecture that holds row r of transformers' query or key projection
// (weight or bias) of heads of headDim rows. transformers rotates a
// head's halves (x[j], x[j+headDim/2]), llama.cpp adjacent pairs (x[2j],
// x[2j+1]), so convert_hf_to_gguf.py's LlamaModel.permute reshapes the
// rows to (heads, 2, headDim/2) and swaps the last two axes: row
// h·headDim + s·headDim/2 + j moves to h·headDim + 2j + s (s = 0, 1).
// Writing moves transformers' row r to RopeFileRow(r); reading takes
// transformers' row r from file row RopeFileRow(r).
func RopeFileRow(r, headDim int) int {
	half := headDim / 2
	h, s, j := r/headDim, r%headDim/half, r%half
	return h*headDim + 2*j + s
}

// RopeFactors returns what llama.cpp's rope_freqs.weight holds for c:
// each rotary frequency's divisor, the unscaled inverse frequency over
// the scaled one (convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors
// for llama3 scaling), a RopeFreqs scaling's Divisors as they are; nil
// when no frequency is scaled.
func (c Config) RopeFactors() []float32 {
	if s := c.RopeScaling; s != nil && s.Type == RopeFreqs {
		return slices.Clone(s.Divisors)
	}
	scaled := c.RopeInvFreq()
	plain := c
	plain.RopeScaling = nil
	base := plain.RopeInvFreq()
	f := make([]float32, len(base))
	scaling := false
	for i := range f {
		f[i] = base[i] / scaled[i]
		scaling = scaling || f[i] != 1
	}
	if !scaling {
		return nil
	}
	return f
}
