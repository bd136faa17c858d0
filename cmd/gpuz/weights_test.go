package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanQuantizedWeights plans Llama-3.1-8B's generation with its
// weights quantized and checks the planned parameter bytes against the
// formats' formulas, worked out here by hand from the model's shapes
// (hidden 4096, 32 layers, 8 key-value heads of 128, intermediate 14336,
// vocabulary 128256, the head untied): ggml's Q8_0 and Q4_0 store 32
// weights in 34 and 18 bytes, Q4_K 256 in 144 (ggml-common.h's block_q8_0,
// block_q4_0, block_q4_K); NF4 half a byte a weight, a byte of quantized
// absmax per 64 weights, a float32 per 256 such blocks and one float32
// offset per tensor (bitsandbytes' quantize_4bit with compress_statistics).
// ggml's kinds store the embedding too; under the bf16 precision they
// default to, the head is bf16 and the norms float32, and NF4's embedding
// float32 (read by a lookup, not a product). At 4096 positions every
// kind but Q8_0 fits the 8 GB laptop card.
func TestPlanQuantizedWeights(t *testing.T) {
	const (
		hidden, layers, kv, inter, vocab = 4096, 32, 1024, 14336, 128256
		embed                            = vocab * hidden
		norms                            = (2*layers + 1) * hidden
	)
	// Each layer's projections as gpuz stores them, [rows, cols]: q, k and
	// v in one tensor, o, gate and up in one, down. (Fused or not is the
	// same to ggml's kinds; NF4 has one offset and group tail per tensor.)
	proj := [][2]int64{{hidden + 2*kv, hidden}, {hidden, hidden}, {2 * inter, hidden}, {hidden, inter}}
	perWeight := func(num, den int64) func(rows, cols int64) int64 {
		return func(rows, cols int64) int64 { return rows * (cols / den) * num }
	}
	nf4 := func(rows, cols int64) int64 {
		n := rows * cols
		return n/2 + n/64 + 4*((n/64+255)/256) + 4
	}
	for _, tc := range []struct {
		kind    string
		bytes   func(rows, cols int64) int64
		embed   bool
		fits    bool
		context string
	}{
		{"q8_0", perWeight(34, 32), true, false, "4096"},
		{"q4_0", perWeight(18, 32), true, true, "4096"},
		{"q4_k", perWeight(144, 256), true, true, "4096"},
		{"nf4", nf4, false, true, "4096"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			var want int64
			for _, p := range proj {
				want += layers * tc.bytes(p[0], p[1])
			}
			if tc.embed {
				want += tc.bytes(vocab, hidden)
			} else {
				want += 4 * embed
			}
			want += 2*embed + 4*norms // the head in bf16, the norms in float32
			b, err := exec.Command(gpuzBinary, "plan", "llm", "generate", "cuda", "--model", "llama-3.1-8b", "--weights", tc.kind,
				"--context", "4096", "--device", "sim:rtx4060-laptop", "--format", "json").Output()
			if err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			var p struct {
				Header struct {
					Precision, Weights string
				} `json:"header"`
				Bytes struct {
					Parameters int64 `json:"parameters"`
				} `json:"bytes"`
				Modes []struct {
					FitsDevice bool `json:"fits_device"`
				} `json:"modes"`
			}
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			if p.Bytes.Parameters != want {
				t.Errorf("parameters %d bytes, want %d", p.Bytes.Parameters, want)
			}
			if p.Header.Weights != tc.kind || p.Header.Precision != "bf16" {
				t.Errorf("header weights %q, precision %q; want %s and bf16", p.Header.Weights, p.Header.Precision, tc.kind)
			}
			if len(p.Modes) != 1 || p.Modes[0].FitsDevice != tc.fits {
				t.Errorf("modes %+v, want cuda fitting: %v", p.Modes, tc.fits)
			}
		})
	}
}

// TestFitGenerateQuantized asks fit the question of TestFitGenerate
// without --weights: the search ranks q8_0 and q4_k beside the floats, and
// the answer is the whole model on the card with q4_k weights in bf16
// (5.56 GiB), bound by the card's memory, its command carrying --weights;
// every row that stores its weights quantized says so, and the table
// gives their bits a weight.
func TestFitGenerateQuantized(t *testing.T) {
	args := []string{"fit", "llm", "generate", "--model", "llama-3.1-8b", "--context", "4096", "--device", "sim:rtx4060-laptop", "--host-profile", "cpu-i7-13700h"}
	b, err := exec.Command(gpuzBinary, append(args, "--format", "json")...).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var doc struct {
		Entries []struct {
			Rank      int    `json:"rank"`
			Mode      string `json:"mode"`
			Precision string `json:"precision"`
			Command   string `json:"command"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Entries) == 0 || doc.Entries[0].Rank != 1 {
		t.Fatalf("entries %+v", doc.Entries)
	}
	best := doc.Entries[0]
	if best.Mode != "cuda" || best.Precision != "bf16" || !strings.Contains(best.Command, "--weights q4_k") {
		t.Errorf("best: %+v, want cuda in bf16 with --weights q4_k", best)
	}
	text, err := exec.Command(gpuzBinary, args...).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, text)
	}
	for _, want := range []string{"cuda, bf16, q4_k weights", "quantized weights, bits a weight: q8_0 8.5, q4_k 4.5"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
}

// TestPlanGGUFFloatWeights plans generation from tinyLlamaConfig's model
// exported as GGUF files of F16 and F32 matrices and checks that the plan
// stores the weights as the file does, as --weights says it defaults to,
// in the file's precision (fp16, fp32; --precision given keeps its own):
// the projections (each layer's q 32×32, k and v 16×32, o 32×32, gate and
// up 48×32, down 32×48) at the file's 2 or 4 bytes, the tied embedding
// (300×32) in float32 whatever the precision (read by a lookup, not only
// by a product: automatic mixed precision's rule), the 5 norms of 32 in
// float32. Before, an F16 file was planned at fp32, its projections at
// twice the file's bytes.
func TestPlanGGUFFloatWeights(t *testing.T) {
	const (
		projections = 2 * (32*32 + 16*32 + 16*32 + 32*32 + 48*32 + 48*32 + 32*48)
		embedding   = 300 * 32
		norms       = (2*2 + 1) * 32
	)
	config := writeTinyConfig(t)
	for _, tc := range []struct {
		typ, precision  string // export's --type, plan's --precision ("" for none)
		wantPrecision   string
		projectionBytes int64
	}{
		{"f16", "", "fp16", 2},
		{"f32", "", "fp32", 4},
		{"f16", "fp32", "fp32", 4},
	} {
		t.Run(tc.typ+"/"+tc.precision, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "m.gguf")
			args := []string{"llm", "export", "--model", config, "--type", tc.typ, "--gguf", file}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("%q: exit status %d: %s", args, code, stderr.String())
			}
			args = []string{"plan", "llm", "generate", "cpu", "--model", file, "--prompt", "4", "--tokens", "2", "--json", "-"}
			if tc.precision != "" {
				args = append(args, "--precision", tc.precision)
			}
			stdout.Reset()
			stderr.Reset()
			if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("%q: exit status %d: %s", args, code, stderr.String())
			}
			var p struct {
				Header struct {
					Precision string `json:"precision"`
				} `json:"header"`
				Bytes struct {
					Parameters int64 `json:"parameters"`
				} `json:"bytes"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
				t.Fatalf("%v: %s", err, stdout.String())
			}
			if want := tc.projectionBytes*projections + 4*embedding + 4*norms; p.Bytes.Parameters != want || p.Header.Precision != tc.wantPrecision {
				t.Errorf("parameters %d bytes at %s, want %d at %s", p.Bytes.Parameters, p.Header.Precision, want, tc.wantPrecision)
			}
		})
	}
}

// TestTrainQuantizedFile plans training from a GGUF file of Q4_0
// projections without --weights: the refusal names the file's kind (the
// user gave none) and both ways on, LoRA on the quantized base or the
// whole model in floats, and the second way plans.
func TestTrainQuantizedFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "m.gguf")
	args := []string{"llm", "export", "--model", "smollm2-135m", "--layers", "1", "--type", "f16", "--weights", "q4_0", "--gguf", file}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("%q: exit status %d: %s", args, code, stderr.String())
	}
	for _, tc := range []struct {
		extra []string
		code  int
		want  string
	}{
		{nil, 2, "gpuz: the file stores its projections in q4_0, a kind for frozen weights, and training changes every weight: train LoRA's adapters on the quantized base with --lora R, or the whole model in floats with --weights f32\n"},
		{[]string{"--weights", "f32"}, 0, ""},
		{[]string{"--lora", "2"}, 0, ""},
	} {
		stdout.Reset()
		stderr.Reset()
		args := append([]string{"plan", "llm", "train", "cpu", "--model", file}, tc.extra...)
		code := run(context.Background(), args, &stdout, &stderr)
		if code != tc.code || (tc.want != "" && stderr.String() != tc.want) {
			t.Errorf("%q: exit status %d, %q; want %d, %q", args, code, stderr.String(), tc.code, tc.want)
		}
	}
}
