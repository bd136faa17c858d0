package gguf

import (
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/half"
	"gpuz/internal/hfconfig"
	"gpuz/internal/models"
	"gpuz/internal/peertest"
	"gpuz/internal/quant"
)

// llamaCppResult is what llamacpp_generate.mjs prints: each prompt's
// generated tokens.
type llamaCppResult struct {
	Sequences []struct {
		Tokens []int `json:"tokens"`
	} `json:"sequences"`
}

// llamaCppGenerate runs llamacpp_generate.mjs on the file at path: the
// greedy tokens llama.cpp generates from each prompt.
func llamaCppGenerate(t *testing.T, node, script, path string, prompts [][]int, tokens int) [][]int {
	t.Helper()
	args := []string{script, "--model", path, "--tokens", strconv.Itoa(tokens), "--threads", "1"}
	for _, p := range prompts {
		ids := make([]string, len(p))
		for i, id := range p {
			ids[i] = strconv.Itoa(id)
		}
		args = append(args, "--prompt-ids", strings.Join(ids, ","))
	}
	cmd := exec.Command(node, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	var r llamaCppResult
	if err := json.Unmarshal(out, &r); err != nil || len(r.Sequences) != len(prompts) {
		t.Fatalf("llamacpp_generate.mjs printed %q, want %d sequences (%v)", out, len(prompts), err)
	}
	got := make([][]int, len(prompts))
	for i, s := range r.Sequences {
		got[i] = s.Tokens
	}
	return got
}

// sharpen returns an edit of m's parameters that makes attention matter
// to the tokens: the queries' and keys' weights scaled by 16, the
// attention's output projection by 8. Drawn as transformers initialises
// them (N(0, 0.02²)), the scores of a tiny model are so small that each
// position attends to all alike, and a wrong rotation (the rows left in
// transformers' order) would not change a token.
func sharpen(m hfconfig.Model) func(name string, values []float32) {
	qkv, out := m.Projection(hfconfig.QKV), m.Projection(hfconfig.Out)
	qk := (m.Heads + m.KVHeads) * m.HeadDim
	return func(name string, values []float32) {
		scale := func(v []float32, by float32) {
			for i := range v {
				v[i] *= by
			}
		}
		switch {
		case strings.HasSuffix(name, qkv.Name+".weight"):
			scale(values[:qk*qkv.In], 16)
		case strings.HasSuffix(name, out.Name+".weight"):
			scale(values, 8)
		}
	}
}

// gpuzGenerate returns gpuz's greedy tokens from prompt on the host, m's
// first layers initialised from seed and changed by edit, each matrix
// rounded as a file of type typ stores it (to binary16 for F16; the
// vectors stay float32).
func gpuzGenerate(t *testing.T, m hfconfig.Model, layers int, seed uint64, edit func(string, []float32), typ Type, prompt []int, tokens int) []int {
	t.Helper()
	return gpuzGenerateIn(t, m, layers, seed, edit, typ, quant.F32, prompt, tokens)
}

// gpuzGenerateIn is gpuzGenerate with the weights a quantized kind stores
// (models.Model.Weights) stored in kind, quantized from the same values
// as the file's (quant.Kind.F32: floats).
func gpuzGenerateIn(t *testing.T, m hfconfig.Model, layers int, seed uint64, edit func(string, []float32), typ Type, kind quant.Kind, prompt []int, tokens int) []int {
	t.Helper()
	g, err := models.GenerateConfig{Model: m, Layers: layers, Batch: 1, Prompt: len(prompt), Context: len(prompt) + tokens}.Build()
	if err != nil {
		t.Fatal(err)
	}
	spec := g.Spec()
	if spec.Weights, err = g.Model.Weights(kind, false); err != nil {
		t.Fatal(err)
	}
	plan, err := engine.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plan.Load(device.NewHost(), engine.Resident{})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	constants := map[*gorgonia.Node]bool{}
	for _, c := range g.Constants {
		constants[c.Node] = true
	}
	err = g.InitParams(seed, func(p *gorgonia.Node, values []float32) error {
		if !constants[p] {
			edit(p.Name(), values)
		}
		if typ == F16 && !constants[p] && p.Shape().Dims() == 2 {
			for i, v := range values {
				values[i] = half.FP16ToFloat32(half.FP16FromFloat32(v))
			}
		}
		return prog.SetInput(p, values)
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]float32, len(prompt))
	for i, id := range prompt {
		ids[i] = float32(id)
	}
	out, err := g.Generate(prog, ids, tokens, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// TestLlamaCppAgrees exports each tiny model, F32 and F16, and has
// llama.cpp (node-llama-cpp's prebuilt CPU build, through
// scripts/llamacpp_generate.mjs) generate greedily from prompts of token
// ids: its tokens must be gpuz's own greedy tokens from the same weights
// (those a run draws, sharpened so that attention matters)
// (for F16, gpuz computing with the matrices rounded to binary16 as the
// file stores them). The models are the tiny ones and two layers of
// SmolLM2-135M. It skips, naming the install command, where node or
// node-llama-cpp is missing.
func TestLlamaCppAgrees(t *testing.T) {
	node, script := peertest.LlamaCpp(t, "llamacpp_generate.mjs", "llama.cpp's agreement runs")
	const promptLen, tokens, prompts = 7, 8, 3
	type model struct {
		name   string
		m      hfconfig.Model
		layers int
		types  []Type
	}
	var cases []model
	for _, tc := range tinyLlamas {
		cases = append(cases, model{tc.name, tinyModel(t, tc.config), 2, []Type{F32, F16}})
	}
	// A preset at its own sizes (head dim 64, a vocabulary of 49152),
	// two of its layers, in the type export writes by default.
	smol, err := hfconfig.Load("smollm2-135m")
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, model{"smollm2-135m-2-layers", smol, 2, []Type{F16}})
	for _, tc := range cases {
		for _, typ := range tc.types {
			t.Run(tc.name+"/"+typ.String(), func(t *testing.T) {
				m := tc.m
				path, _ := exportModel(t, m, tc.layers, 5, typ, F32, sharpen(m))
				rng := rand.New(rand.NewPCG(11, 0))
				var all [][]int
				for range prompts {
					prompt := make([]int, promptLen)
					for i := range prompt {
						prompt[i] = rng.IntN(m.Vocab)
					}
					all = append(all, prompt)
				}
				got := llamaCppGenerate(t, node, script, path, all, tokens)
				for i, prompt := range all {
					want := gpuzGenerate(t, m, tc.layers, 5, sharpen(m), typ, prompt, tokens)
					if !slices.Equal(got[i], want) {
						t.Errorf("prompt %v: llama.cpp generates %v, gpuz %v", prompt, got[i], want)
					}
				}
			})
		}
	}
}

// TestLlamaCppAgreesQuantized exports each tiny model whose rows are
// whole blocks with its projections and token embedding in Q8_0 and Q4_0
// (the head and the norms F32), has llama.cpp generate 16 tokens greedily
// from two prompts, and checks that gpuz, its same weights stored in the
// same kind (quantized from the same values, so the same blocks), generates
// the same first 8 tokens. llama.cpp's CPU kernels quantize the
// activations to 8 bits for these products (ggml's vec_dot_q8_0_q8_0 and
// vec_dot_q4_0_q8_0) where gpuz's keep them in float32, so the logits
// differ by that rounding, and on these random weights a near tie can
// flip a later token (one of the eight sequences does at its eleventh);
// the first eight agree in every sequence, and a kernel or layout bug
// (a Q4_0 nibble order swapped in gpuz's decode) changes the first.
func TestLlamaCppAgreesQuantized(t *testing.T) {
	node, script := peertest.LlamaCpp(t, "llamacpp_generate.mjs", "llama.cpp's agreement runs")
	const promptLen, tokens, agreed = 7, 16, 8
	for _, tc := range quantLlamas {
		for _, typ := range tc.kinds {
			if typ != Q8_0 && typ != Q4_0 {
				continue
			}
			kind, _ := quant.FromGGML(uint32(typ))
			t.Run(tc.name+"/"+typ.String(), func(t *testing.T) {
				m := tinyModel(t, tc.config)
				path, _ := exportModel(t, m, m.Layers, 5, F32, typ, func(string, []float32) {})
				rng := rand.New(rand.NewPCG(13, 0))
				prompts := make([][]int, 2)
				for i := range prompts {
					prompts[i] = make([]int, promptLen)
					for j := range prompts[i] {
						prompts[i][j] = rng.IntN(m.Vocab)
					}
				}
				got := llamaCppGenerate(t, node, script, path, prompts, tokens)
				for i, prompt := range prompts {
					want := gpuzGenerateIn(t, m, m.Layers, 5, func(string, []float32) {}, F32, kind, prompt, tokens)
					if len(got[i]) != tokens || !slices.Equal(got[i][:agreed], want[:agreed]) {
						t.Errorf("prompt %v: llama.cpp generates %v, gpuz %v (the first %d must agree)", prompt, got[i], want, agreed)
					}
				}
			})
		}
	}
}
