package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpuz/internal/gguf"
	"gpuz/internal/hfconfig"
	"gpuz/internal/quant"
)

// TestLoadWeights exports SmolLM2-135M's first two layers drawn from seed
// 7 as an F32 GGUF file, then generates from the file with
// --load-weights and another seed: the tokens are the preset's at seed 7,
// in float32 and with the projections quantized to Q8_0 (the file's
// floats quantized as the preset's drawn ones are), and without
// --load-weights (weights drawn from the other seed) they are not.
func TestLoadWeights(t *testing.T) {
	file := filepath.Join(t.TempDir(), "smollm2.gguf")
	if out, err := exec.Command(gpuzBinary, "llm", "export", "--model", "smollm2-135m", "--layers", "2", "--type", "f32", "--seed", "7", "--gguf", file).CombinedOutput(); err != nil {
		t.Fatalf("export: %v: %s", err, out)
	}
	generate := func(args ...string) []int { t.Helper(); return generateTokens(t, args...) }
	for _, weights := range [][]string{nil, {"--weights", "q8_0"}} {
		preset := generate(append([]string{"--model", "smollm2-135m", "--layers", "2", "--seed", "7"}, weights...)...)
		loaded := generate(append([]string{"--model", file, "--load-weights", "--seed", "99"}, weights...)...)
		drawn := generate(append([]string{"--model", file, "--seed", "99"}, weights...)...)
		if !slices.Equal(loaded, preset) {
			t.Errorf("%v: the file's weights generate %v, the preset's at seed 7 %v", weights, loaded, preset)
		}
		if slices.Equal(drawn, preset) {
			t.Errorf("%v: weights drawn from seed 99 generate the seed 7 tokens %v too: the check cannot tell", weights, drawn)
		}
	}
}

// generateTokens runs gpuz llm generate cpu with args after a prompt of 8
// ids, 8 tokens and 2 epochs, and returns the tokens it generated.
func generateTokens(t *testing.T, args ...string) []int {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.json")
	args = append([]string{"llm", "generate", "cpu", "--prompt-ids", "1,2,3,4,5,6,7,8", "--tokens", "8", "--epochs", "2", "--json", path}, args...)
	if out, err := exec.Command(gpuzBinary, args...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v: %s", args, err, out)
	}
	var doc struct {
		Modes []struct {
			Generated [][]int `json:"generated"`
		} `json:"modes"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Modes) != 1 || len(doc.Modes[0].Generated) != 1 {
		t.Fatalf("%v: %v in %s", args, err, b)
	}
	return doc.Modes[0].Generated[0]
}

// mixedLlama is a two-layer llama whose every matrix is whole Q4_K and
// Q6_K super-blocks, with an untied head.
const mixedLlama = `{"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
	"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 64,
	"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false, "hidden_act": "silu"}`

// q4KMTypes are the matrices a Q4_K_M file of mixedLlama stores in Q6_K
// among its Q4_K ones (llama.cpp's quantizer: the head, attn_v and
// ffn_down of some layers).
var q4KMTypes = map[string]gguf.Type{"output.weight": gguf.Q6_K, "blk.0.attn_v.weight": gguf.Q6_K, "blk.1.ffn_down.weight": gguf.Q6_K}

// writeMixedGGUF writes mixedLlama as a GGUF file at path with random
// values, its projections and embedding in Q4_K, the head F32, and types
// over those; the values of the Q6_K tensors are first passed through
// Q6_K when roundTrip6K is set.
func writeMixedGGUF(t *testing.T, path string, types map[string]gguf.Type, roundTrip6K bool) {
	t.Helper()
	c, err := hfconfig.Parse([]byte(mixedLlama))
	if err != nil {
		t.Fatal(err)
	}
	l := gguf.Llama{Config: c, Layers: c.Layers, Name: "mixed", Type: gguf.F32, Weights: gguf.Q4_K, Types: types}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tensors := l.Tensors()
	enc, err := gguf.NewEncoder(f, l.Metadata(), tensors)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, tt := range tensors {
		n := 1
		for _, d := range tt.Dims {
			n *= int(d)
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.1)
		}
		if strings.HasSuffix(tt.Name, "norm.weight") {
			for i := range v {
				v[i] += 1
			}
		}
		if roundTrip6K && q4KMTypes[tt.Name] == gguf.Q6_K {
			rows, cols := n/int(tt.Dims[0]), int(tt.Dims[0])
			q := make([]byte, quant.Q6_K.Bytes(rows, cols))
			if err := quant.Quantize(quant.Q6_K, q, v, rows, cols); err != nil {
				t.Fatal(err)
			}
			if err := quant.Dequantize(quant.Q6_K, v, q, rows, cols); err != nil {
				t.Fatal(err)
			}
		}
		if err := enc.Write(tt.Name, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLoadWeightsMixed loads a file that mixes Q4_K and Q6_K tensors as
// llama.cpp's Q4_K_M files do (q4KMTypes) with --load-weights: a run
// without --weights is refused (gpuz stores the projections in one kind),
// --weights q6_k generates, and --weights q4_k generates the tokens of a
// file of Q4_K projections whose values are the mixed file's Q6_K tensors
// dequantized (the loader dequantizes the Q6_K tensors and quantizes them
// again to Q4_K, the head's into floats), and not those of weights drawn
// at random.
func TestLoadWeightsMixed(t *testing.T) {
	dir := t.TempDir()
	mixed, plain := filepath.Join(dir, "q4_k_m.gguf"), filepath.Join(dir, "q4_k.gguf")
	writeMixedGGUF(t, mixed, q4KMTypes, false)
	writeMixedGGUF(t, plain, nil, true)

	out, err := exec.Command(gpuzBinary, "llm", "generate", "cpu", "--model", mixed, "--load-weights", "--tokens", "2").CombinedOutput()
	if want := "the file's projections mix q4_k and q6_k"; err == nil || !strings.Contains(string(out), want) {
		t.Errorf("without --weights: %v: %s, want a refusal saying %q", err, out, want)
	}
	generateTokens(t, "--model", mixed, "--load-weights", "--weights", "q6_k")
	loaded := generateTokens(t, "--model", mixed, "--load-weights", "--weights", "q4_k")
	want := generateTokens(t, "--model", plain, "--load-weights", "--weights", "q4_k")
	drawn := generateTokens(t, "--model", mixed, "--weights", "q4_k")
	if !slices.Equal(loaded, want) {
		t.Errorf("the mixed file generates %v, the Q4_K file of its values %v", loaded, want)
	}
	if slices.Equal(drawn, want) {
		t.Errorf("weights drawn at random generate the file's tokens %v too: the check cannot tell", drawn)
	}
}
