package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"gpuz/internal/hfconfig"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// defaultLLMModel is --model's default: the smallest preset of the Llama
// family, which runs at full depth on a laptop's CPU.
const defaultLLMModel = "smollm2-135m"

// llmWorkload is gpuz llm.
var llmWorkload = workloadDef{
	workload: models.LLM,
	short:    "Your model: a decoder transformer (Llama, Mistral, Qwen2, SmolLM2, GPT-2) from a Hugging Face config",
	long: `The llm workload: the decoder transformer a Hugging Face config.json
describes (--model: a preset, a config.json, a downloaded model's
directory, whose safetensors headers are checked against the model gpuz
builds, or a GGUF file (FILE.gguf: llama.cpp's llama and qwen2
architectures), whose metadata is the config and whose tensor table is
checked the same way; no weights are read). Token ids drawn uniformly below the
vocabulary are trained with cross-entropy to predict each next token, as a
causal language model is. The blocks are the embedding, each decoder layer
and the final norm with the head, so that --place, the cache's window and
--recompute count layers as llama.cpp's "layers on the GPU" do; --layers N
builds the first N layers only, to run a large model's shape on a small
machine. MODES is a comma list of cuda (or gpu), cache, cpu, hybrid and
managed; the default is cuda,cache,cpu. docs/llm.md has the worked
examples.`,
	example: `  gpuz llm --list-models
  gpuz llm train cpu --model smollm2-135m --layers 2 --seq-len 64
  gpuz llm train cuda,cache,cpu --model smollm2-135m --layers 4 --seq-len 128 --batch 2 --device sim:1GiB
  gpuz plan llm train cuda --model llama-3.2-1b --seq-len 1024 --batch 1 --device sim:rtx4060-laptop
  gpuz llm eval cpu --model gpt2 --layers 2 --scale small`,
	flags: addLLMFlags,
}

// addAttentionFlag adds --attention, sweepable, defaulting to def.
func addAttentionFlag(lists *listFlags, fs *pflag.FlagSet, def levers.Attention) {
	lists.add(fs, "attention", "strings", string(def), "attention: eager (each layer's attention probabilities, batch × heads × seq-len², kept for the backward pass) or fused (only the output and one log-sum-exp per row kept, the probabilities computed again block by block in the backward pass, as FlashAttention and PyTorch's scaled_dot_product_attention); a comma list sweeps")
}

// addLLMFlags adds the llm workload's own flags: --model, --list-models
// and --attention (fused by default, as transformers' default attention),
// and to a plan --framework.
func addLLMFlags(fs *pflag.FlagSet, lists *listFlags, o *WorkloadOptions) {
	addAttentionFlag(lists, fs, levers.AttentionFused)
	addLoRAFlags(lists, fs, o, "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj and down_proj (the Llama family) or c_attn, c_proj and c_fc (GPT-2)", "q_proj,v_proj for the Llama family, c_attn for GPT-2, as PEFT's")
	fs.StringVar(&o.Model, "model", defaultLLMModel, "the model: a preset (gpuz llm --list-models), a config.json, a directory holding one (and its safetensors, whose headers are checked), or a GGUF file (FILE.gguf, its tensor table checked)")
	fs.BoolVar(&o.ListModels, "list-models", false, "list the preset models, their sources and parameter counts, and exit")
	addGenerateFlags(fs, o)
	addWeightsFlag(fs, o)
	if !o.PlanOnly {
		addLoadWeightsFlag(fs, o)
	}
}

// resolveModel reads --model and gives the options the llm workload of
// that model; it does nothing for the other workloads. Its errors are
// usage errors, or errInterrupted where ctx ends first (loadModel).
func (o *WorkloadOptions) resolveModel(ctx context.Context) error {
	if o.Workload.Name != models.LLM.Name {
		return nil
	}
	if o.Model == "" {
		return usagef("--model: empty (want a preset, a config.json, a directory holding one or a GGUF file; gpuz llm --list-models lists the presets)")
	}
	m, err := loadModel(ctx, o.Model)
	if errors.Is(err, errInterrupted) {
		return err
	}
	if err != nil {
		return usagef("--model: %w", err)
	}
	// A file whose projections mix kinds (a Q4_K_M file) runs when
	// --weights names the kind they are stored in.
	if o.fileWeights, err = fileWeights(m); err != nil && o.weightsText == "" {
		return usagef("--model: %s: %w", shortText(o.Model), err)
	}
	o.Workload = models.LLMOf(m)
	o.modelName, o.gguf = modelName(m), m.GGUF
	return nil
}

// loadModel reads the model at path (hfconfig.Load: a preset, a config
// file, a snapshot directory whose safetensors headers it checks, or a
// GGUF file's tensor table) until ctx ends: then it returns
// errInterrupted at once, leaving the reading, which holds nothing but
// memory, to end with the process. Checking a header of 300,000 tensors
// takes seconds, and a signal stops any phase within a second.
func loadModel(ctx context.Context, path string) (hfconfig.Model, error) {
	var (
		m   hfconfig.Model
		err error
	)
	if !untilDone(ctx, func() { m, err = hfconfig.Load(path) }) {
		return hfconfig.Model{}, errInterrupted
	}
	return m, err
}

// modelName is how a run names the model: the preset's name, the
// snapshot directory's, the name of a config file other than config.json
// without its extension, or the directory of a config.json.
func modelName(m hfconfig.Model) string {
	switch {
	case m.Dir != "":
		return filepath.Base(filepath.Clean(m.Dir))
	case !strings.ContainsAny(m.Name, `/\`) && !strings.HasSuffix(m.Name, ".json"):
		return m.Name // a preset
	case filepath.Base(m.Name) == "config.json":
		return filepath.Base(filepath.Dir(filepath.Clean(m.Name)))
	}
	return strings.TrimSuffix(filepath.Base(m.Name), filepath.Ext(m.Name))
}

// writeModelList prints the presets: name, repository, parameter count and
// source.
func writeModelList(o *WorkloadOptions) error {
	w := o.IO.Out
	fmt.Fprintf(w, "%-16s %-36s %14s  %s\n", "model", "Hugging Face repository", "parameters", "architecture")
	for _, p := range hfconfig.Presets() {
		c := p.Config
		arch := fmt.Sprintf("%s: %d layers, hidden %d, %d heads (%d kv), vocab %d", c.ModelType, c.Layers, c.Hidden, c.Heads, c.KVHeads, c.Vocab)
		fmt.Fprintf(w, "%-16s %-36s %14s  %s\n", p.Name, p.Repo, fmt.Sprintf("%d", p.Params), arch)
	}
	fmt.Fprintln(w, "parameters: the published total, tied weights counted once; each preset is the repository's config.json (sources: docs/llm.md)")
	return nil
}

// shellWord returns s as one word of a POSIX shell's command line: as it
// is when it holds only characters no shell reads specially, else in
// single quotes.
func shellWord(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=+,@", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
