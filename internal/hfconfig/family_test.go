package hfconfig

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFamilyDefaults parses a config.json that gives nothing but its
// model_type: every field takes the default of transformers' config class
// (LlamaConfig(), MistralConfig(), Qwen2Config(), GPT2Config()), written
// here from transformers' configuration files, apart from the table.
func TestFamilyDefaults(t *testing.T) {
	tests := []struct {
		modelType string
		want      Config
		defaulted string
	}{
		{"llama", Config{
			ModelType: "llama", Arch: ArchLlama, Hidden: 4096, Intermediate: 11008, Layers: 32, Heads: 32,
			KVHeads: 32, HeadDim: 128, Vocab: 32000, MaxPositions: 2048, Act: ActSiLU, NormEps: 1e-6, RopeTheta: 10000,
		}, "vocab_size 32000, max_position_embeddings 2048, hidden_size 4096, intermediate_size 11008, num_hidden_layers 32, num_attention_heads 32"},
		{"mistral", Config{
			ModelType: "mistral", Arch: ArchLlama, Hidden: 4096, Intermediate: 14336, Layers: 32, Heads: 32,
			KVHeads: 8, HeadDim: 128, Vocab: 32000, MaxPositions: 131072, Act: ActSiLU, NormEps: 1e-6, RopeTheta: 10000,
			SlidingWindow: 4096,
		}, "vocab_size 32000, max_position_embeddings 131072, hidden_size 4096, intermediate_size 14336, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, sliding_window 4096"},
		{"qwen2", Config{
			ModelType: "qwen2", Arch: ArchLlama, Hidden: 4096, Intermediate: 22016, Layers: 32, Heads: 32,
			KVHeads: 32, HeadDim: 128, Vocab: 151936, MaxPositions: 32768, Act: ActSiLU, NormEps: 1e-6, RopeTheta: 10000,
			QKVBias: true,
		}, "vocab_size 151936, max_position_embeddings 32768, hidden_size 4096, intermediate_size 22016, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32"},
		{"gpt2", Config{
			ModelType: "gpt2", Arch: ArchGPT2, Hidden: 768, Intermediate: 3072, Layers: 12, Heads: 12,
			KVHeads: 12, HeadDim: 64, Vocab: 50257, MaxPositions: 1024, TieEmbeddings: true, Act: ActGELUTanh,
			NormEps: 1e-5, Dropout: 0.1, Dropouts: "resid_pdrop 0.1, embd_pdrop 0.1, attn_pdrop 0.1",
		}, "vocab_size 50257, n_positions 1024, n_embd 768, n_layer 12, n_head 12"},
	}
	for _, tt := range tests {
		c, err := Parse([]byte(`{"model_type": "` + tt.modelType + `"}`))
		if err != nil {
			t.Errorf("%s: %v", tt.modelType, err)
			continue
		}
		tt.want.Defaulted = tt.defaulted
		if c != tt.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.modelType, c, tt.want)
		}
	}
}

// TestQwen2Tensors checks the bias rule of qwen2: q, k and v have biases,
// o_proj and the MLP none.
func TestQwen2Tensors(t *testing.T) {
	c, err := Parse(edit(t, strings.Replace(llamaJSON, `"llama"`, `"qwen2"`, 1), map[string]string{"num_hidden_layers": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ts := range c.Tensors()[1:9] {
		got = append(got, ts.Name+" "+shapeString(ts.Shape))
	}
	want := []string{
		"model.layers.0.self_attn.q_proj.weight [64 64]", "model.layers.0.self_attn.q_proj.bias [64]",
		"model.layers.0.self_attn.k_proj.weight [32 64]", "model.layers.0.self_attn.k_proj.bias [32]",
		"model.layers.0.self_attn.v_proj.weight [32 64]", "model.layers.0.self_attn.v_proj.bias [32]",
		"model.layers.0.self_attn.o_proj.weight [64 64]", "model.layers.0.mlp.gate_proj.weight [128 64]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("qwen2 Tensors():\n got %q\nwant %q", got, want)
	}
}

// TestFamilyTable checks that each Arch is consistent with itself: its
// layer's state_dict order names each role once, a packed module's parts
// match its segments, the kinds agree with the modules, and LoRA's
// default targets are among its linear modules.
func TestFamilyTable(t *testing.T) {
	for _, a := range archs {
		order := slices.Clone(a.stateOrder)
		slices.Sort(order)
		if !slices.Equal(order, []Role{AttnNorm, QKV, Out, MLPNorm, Up, Down}) {
			t.Errorf("%s: state order %v is not each role once", a.Name, a.stateOrder)
		}
		if n := len(a.Modules.QKV.Parts); n != 0 && n != 3 {
			t.Errorf("%s: %d parts of the queries', keys' and values' projection, want 0 or 3", a.Name, n)
		}
		up := 1
		if a.MLP == GatedSiLU {
			up = 2
		}
		if n := len(a.Modules.Up.Parts); n != 0 && n != up {
			t.Errorf("%s: %d parts of the MLP's input projection, want 0 or %d", a.Name, n, up)
		}
		if (a.Positions == Learned) != (a.Modules.Positions != "") || (a.Positions == Rotary) != (a.keys.ropeTheta != "") {
			t.Errorf("%s: positions %v with a table named %q and rope key %q", a.Name, a.Positions, a.Modules.Positions, a.keys.ropeTheta)
		}
		if (a.MLP == GatedSiLU) != (a.Act == ActSiLU) {
			t.Errorf("%s: MLP %v computes %s", a.Name, a.MLP, a.Act)
		}
		var kinds []string
		for _, m := range a.LinearModules() {
			kinds = append(kinds, m[strings.LastIndexByte(m, '.')+1:])
		}
		for _, d := range a.LoRADefault {
			if !slices.Contains(kinds, d) {
				t.Errorf("%s: LoRA's default target %s is none of its modules %v", a.Name, d, kinds)
			}
		}
	}
	for _, mt := range modelTypes {
		if !slices.Contains(archs, mt.arch) {
			t.Errorf("model_type %s: its Arch is not in archs", mt.name)
		}
	}
}

// familyBranch matches a comparison with a family's name, or a branch on
// a model_type or on the family value: what family.go alone may hold.
var familyBranch = regexp.MustCompile(`` +
	`[=!]=\s*"(gpt2|llama|mistral|qwen2)"` +
	`|"(gpt2|llama|mistral|qwen2)"\s*[=!]=` +
	`|case\s[^:]*"(gpt2|llama|mistral|qwen2)"` +
	`|(EqualFold|HasPrefix|HasSuffix|Contains)\([^)]*"(gpt2|llama|mistral|qwen2)"` +
	`|ModelType\s*[=!]=|[=!]=\s*[\w.]*ModelType\b|switch\s[^{]*ModelType` +
	`|[=!]=\s*(hfconfig\.)?Arch(Llama|GPT2)\b|\bArch(Llama|GPT2)\s*[=!]=|case\s[^:]*\bArch(Llama|GPT2)\b`)

// TestNoFamilyBranch scans the non-test Go files under internal/ and cmd/
// for a branch on a family's name or value outside family.go: a next
// family must be one more entry in its table, not a case at each site.
func TestNoFamilyBranch(t *testing.T) {
	for _, dir := range []string{"../../internal", "../../cmd"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			if filepath.ToSlash(path) == "../../internal/hfconfig/family.go" {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(data), "\n") {
				if code, _, _ := strings.Cut(line, "//"); familyBranch.MatchString(code) {
					t.Errorf("%s:%d branches on a family: %s", path, i+1, strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestFamilyBranchPattern checks familyBranch on lines it must and must
// not match, so that TestNoFamilyBranch can fail.
func TestFamilyBranchPattern(t *testing.T) {
	for _, line := range []string{
		`if c.Model.Arch == "gpt2" {`,
		`if "llama" != mt {`,
		`case "mistral", "qwen2":`,
		`if strings.EqualFold(name, "qwen2") {`,
		`if cfg.ModelType == mt {`,
		`switch c.ModelType {`,
		`if c.Arch == hfconfig.ArchGPT2 {`,
		`case hfconfig.ArchLlama:`,
	} {
		if !familyBranch.MatchString(line) {
			t.Errorf("familyBranch misses %s", line)
		}
	}
	for _, line := range []string{
		`Name: "gpt2", Repo: "openai-community/gpt2",`,
		`fmt.Sprintf("%s: %d layers", c.ModelType, c.Layers)`,
		`if cfg.Arch == nil {`,
		`if a.Positions == hfconfig.Learned {`,
	} {
		if familyBranch.MatchString(line) {
			t.Errorf("familyBranch matches %s", line)
		}
	}
}
