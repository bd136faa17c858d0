package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// generateDoc is what the tests read of a generation's JSON.
type generateDoc struct {
	Header struct {
		Task         string `json:"task"`
		Prompt       int    `json:"prompt"`
		Tokens       int    `json:"tokens"`
		Context      int    `json:"context"`
		KVCacheBytes int64  `json:"kv_cache_bytes"`
		KVCacheType  string `json:"kv_cache_type"`
	} `json:"header"`
	Modes []struct {
		Mode      string  `json:"mode"`
		Status    string  `json:"status"`
		Reason    string  `json:"reason"`
		Generated [][]int `json:"generated"`
		Epochs    []struct {
			Value      float64 `json:"value"`
			Generation *struct {
				PrefillTokens  int     `json:"prefill_tokens"`
				PrefillSeconds float64 `json:"prefill_seconds"`
				DecodeTokens   int     `json:"decode_tokens"`
				DecodeSeconds  float64 `json:"decode_seconds"`
			} `json:"generation"`
		} `json:"epochs"`
	} `json:"modes"`
}

// TestLLMGenerate runs gpuz llm generate in every mode that has a
// placement of its own, with float32 key-value caches (the default under
// fp32) and with bf16 ones (--kv-dtype bf16), and checks that each mode
// generates the same tokens, as many as asked for every sequence, with
// both phases' tokens counted in every repetition, the same value (the
// logits bit-identical), and the caches' type and bytes in the header.
func TestLLMGenerate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a generation in four modes")
	}
	for _, tc := range []struct {
		flags []string
		typ   string
		elem  int64
	}{{nil, "fp32", 4}, {[]string{"--kv-dtype", "bf16"}, "bf16", 2}} {
		t.Run(tc.typ, func(t *testing.T) { checkLLMGenerate(t, tc.flags, tc.typ, tc.elem) })
	}
}

// checkLLMGenerate is TestLLMGenerate with the flags given, caches of typ
// and elem bytes an element.
func checkLLMGenerate(t *testing.T, flags []string, typ string, elem int64) {
	out := filepath.Join(t.TempDir(), "gen.json")
	args := append([]string{"llm", "generate", "cuda,cache,hybrid,cpu", "--model", "smollm2-135m", "--layers", "3",
		"--prompt", "9", "--tokens", "5", "--batch", "2", "--epochs", "2", "--device", "sim:1GiB", "--place", "host:0-1,cuda:2-4",
		"--win-size", "2", "--json", out}, flags...)
	cmd := exec.Command(gpuzBinary, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc generateDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	h := doc.Header
	// SmolLM2-135M: 3 kv heads of 64, two sequences.
	if want := 2 * 3 * 3 * 64 * 13 * 2 * elem; h.Task != "generate" || h.Prompt != 9 || h.Tokens != 5 || h.Context != 13 || h.KVCacheBytes != want || h.KVCacheType != typ {
		t.Errorf("header %+v, want generate, prompt 9, tokens 5, context 13, %d cache bytes of %s", h, want, typ)
	}
	if len(doc.Modes) != 4 {
		t.Fatalf("%d modes, want 4", len(doc.Modes))
	}
	first := doc.Modes[0]
	for _, m := range doc.Modes {
		if m.Status != "ok" {
			t.Errorf("%s: %s: %s", m.Mode, m.Status, m.Reason)
			continue
		}
		if len(m.Generated) != 2 || len(m.Generated[0]) != 5 || len(m.Generated[1]) != 5 {
			t.Errorf("%s generated %v, want 2 sequences of 5 tokens", m.Mode, m.Generated)
		}
		if !slices.EqualFunc(m.Generated, first.Generated, slices.Equal) {
			t.Errorf("%s generated %v, %s %v: greedy decoding of one model must agree", m.Mode, m.Generated, first.Mode, first.Generated)
		}
		if len(m.Epochs) != 2 {
			t.Fatalf("%s: %d generations, want 2", m.Mode, len(m.Epochs))
		}
		for i, e := range m.Epochs {
			g := e.Generation
			if g == nil || g.PrefillTokens != 18 || g.DecodeTokens != 8 || g.PrefillSeconds <= 0 || g.DecodeSeconds <= 0 {
				t.Errorf("%s generation %d: %+v, want 18 prefill and 8 decode tokens, both timed", m.Mode, i, g)
			}
			if e.Value != first.Epochs[0].Value {
				t.Errorf("%s generation %d: value %v, %s's %v: the logits must be bit-identical", m.Mode, i, e.Value, first.Mode, first.Epochs[0].Value)
			}
		}
	}
}

// TestPlanGenerateKVCache checks the plan of a generation: the key-value
// caches of Llama-3.1-8B at a context of 8192, 2 · 32 layers · 8 kv heads
// · 128 · 8192 positions, in float32 beside float32 weights, and in bf16
// under --precision bf16 (the cache's type follows the precision's) and
// under fp32 with --kv-dtype bf16, in the plan and in its header; and
// the float32 weights beside them, the published 8,030,261,248
// parameters.
func TestPlanGenerateKVCache(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		typ   string
		kv    int64
	}{
		{"fp32", nil, "fp32", 2 * 32 * 8 * 128 * 8192 * 4},
		{"bf16", []string{"--precision", "bf16"}, "bf16", 2 * 32 * 8 * 128 * 8192 * 2},
		{"fp32 weights, bf16 cache", []string{"--kv-dtype", "bf16"}, "bf16", 2 * 32 * 8 * 128 * 8192 * 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"plan", "llm", "generate", "cuda", "--model", "llama-3.1-8b", "--context", "8192",
				"--device", "sim:rtx4060-laptop", "--format", "json"}, tc.flags...)
			b, err := exec.Command(gpuzBinary, args...).Output()
			if err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			var p struct {
				Header struct {
					Precision    string `json:"precision"`
					KVCacheBytes int64  `json:"kv_cache_bytes"`
					KVCacheType  string `json:"kv_cache_type"`
				} `json:"header"`
				Bytes struct {
					Parameters int64 `json:"parameters"`
					KVCache    int64 `json:"kv_cache"`
				} `json:"bytes"`
			}
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			if p.Bytes.KVCache != tc.kv || p.Header.KVCacheBytes != tc.kv || p.Header.KVCacheType != tc.typ {
				t.Errorf("kv cache %d bytes, header %+v; want %d bytes of %s", p.Bytes.KVCache, p.Header, tc.kv, tc.typ)
			}
			if p.Header.Precision == "fp32" && p.Bytes.Parameters != 4*8030261248 {
				t.Errorf("parameters %d bytes, want %d", p.Bytes.Parameters, int64(4*8030261248))
			}
		})
	}
}

// TestFitGenerate asks fit how to run Llama-3.1-8B's generation on an
// 8 GB laptop card with its weights in floats (--weights f32; fit's
// quantized answer is TestFitGenerateQuantized's): the whole model does
// not fit, so the answer is a
// hybrid placement or the cpu, ranked by the predicted decode tokens a
// second (fastest first), every ranked entry with a prediction of its
// passes, and each command line a generation of the same sizes.
func TestFitGenerate(t *testing.T) {
	b, err := exec.Command(gpuzBinary, "fit", "llm", "generate", "--model", "llama-3.1-8b", "--context", "4096", "--device", "sim:rtx4060-laptop",
		"--host-profile", "cpu-i7-13700h", "--weights", "f32", "--format", "json").Output()
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var doc struct {
		Entries []struct {
			Rank       int    `json:"rank"`
			Mode       string `json:"mode"`
			Command    string `json:"command"`
			Prediction *struct {
				Generation *struct {
					DecodeTokensPerSecond float64 `json:"decode_tokens_per_second"`
					DecodeLimit           string  `json:"decode_limit"`
				} `json:"generation"`
			} `json:"prediction"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	last, modes := 0.0, map[string]bool{}
	for _, e := range doc.Entries {
		if e.Rank == 0 {
			continue
		}
		if e.Prediction == nil || e.Prediction.Generation == nil {
			t.Fatalf("#%d %s: no generation predicted", e.Rank, e.Mode)
		}
		g := e.Prediction.Generation
		if last > 0 && g.DecodeTokensPerSecond > last*(1+0.05) {
			t.Errorf("#%d %s: %.3g tokens/s ranked below %.3g", e.Rank, e.Mode, g.DecodeTokensPerSecond, last)
		}
		last = g.DecodeTokensPerSecond
		modes[e.Mode] = true
		if e.Rank == 1 && (e.Mode != "hybrid" || g.DecodeLimit != "host memory") {
			t.Errorf("best: %s bound by %s, want a hybrid placement bound by the host's memory", e.Mode, g.DecodeLimit)
		}
		for _, want := range []string{"llm generate", "--prompt 512", "--tokens 128", "--context 4096"} {
			if !strings.Contains(e.Command, want) {
				t.Errorf("#%d: command %q lacks %q", e.Rank, e.Command, want)
			}
		}
		if strings.Contains(e.Command, "--seq-len") || strings.Contains(e.Command, "--samples") {
			t.Errorf("#%d: command %q sizes a generation with --seq-len or --samples", e.Rank, e.Command)
		}
	}
	for _, m := range []string{"hybrid", "cache", "cpu"} {
		if !modes[m] {
			t.Errorf("no %s configuration ranked", m)
		}
	}
	if modes["cuda"] {
		t.Error("cuda ranked: the model's 15 GiB of bf16 weights cannot fit 8 GiB")
	}
}

// TestFitGenerateContextMax asks fit for the longest context the fastest
// way to run Llama-3.1-8B on the laptop fits, and checks it against the
// plan: that configuration fits at that context and not at one more.
func TestFitGenerateContextMax(t *testing.T) {
	b, err := exec.Command(gpuzBinary, "fit", "llm", "generate", "--model", "llama-3.1-8b", "--context", "max", "--device", "sim:rtx4060-laptop",
		"--host-profile", "cpu-i7-13700h", "--margin", "0", "--weights", "f32", "--format", "json").Output()
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var doc struct {
		Budget         int64 `json:"budget"`
		LongestContext int   `json:"longest_context"`
		Entries        []struct {
			Place     string `json:"place"`
			Precision string `json:"precision"`
			Command   string `json:"command"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.LongestContext < 512+128-1 || len(doc.Entries) == 0 || doc.Entries[0].Place == "" {
		t.Fatalf("longest context %d for %+v", doc.LongestContext, doc.Entries[:min(1, len(doc.Entries))])
	}
	if strings.Contains(doc.Entries[0].Command, "--context") {
		t.Errorf("command %q: fit planned the least context, its command gives none", doc.Entries[0].Command)
	}
	best := doc.Entries[0]
	// need is the device's and the host's need of the configuration at a
	// context, and whether the host holds it.
	need := func(context int) (device int64, hostFits bool) {
		out, err := exec.Command(gpuzBinary, "plan", "llm", "generate", "hybrid", "--model", "llama-3.1-8b", "--place", best.Place,
			"--precision", best.Precision, "--context", fmt.Sprint(context), "--device", "sim:rtx4060-laptop", "--format", "json").Output()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var p struct {
			Modes []struct {
				DeviceBytes int64 `json:"device_bytes"`
				FitsHost    bool  `json:"fits_host"`
			} `json:"modes"`
		}
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		return p.Modes[0].DeviceBytes, p.Modes[0].FitsHost
	}
	at, hostAt := need(doc.LongestContext)
	past, hostPast := need(doc.LongestContext + 1)
	if at > doc.Budget || !hostAt || (past <= doc.Budget && hostPast) {
		t.Errorf("at %d positions the device needs %d bytes (the host holds it: %v), at one more %d (%v), the budget %d: want the first to fit, the second not",
			doc.LongestContext, at, hostAt, past, hostPast, doc.Budget)
	}
}
