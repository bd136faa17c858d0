package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"gpuz/internal/bench"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// generateFlags are the generate task's own flags (gpuz llm generate),
// which the other tasks refuse.
var generateFlags = []string{"prompt", "tokens", "context", "prompt-ids", "kv-dtype"}

// kvDTypes are --kv-dtype's values, llama.cpp's names for the cache's
// types (-ctk, -ctv), and the precisions they store.
var kvDTypes = map[string]levers.Precision{"f32": levers.FP32, "bf16": levers.BF16, "f16": levers.FP16}

// generateDefaults are --prompt's and --tokens' defaults at each scale:
// llama-bench's pp512 and tg128 at full scale.
var generateDefaults = map[string][2]int{
	models.ScaleFull:  {512, 128},
	models.ScaleSmall: {32, 8},
	models.ScaleDemo:  {128, 32},
}

// addGenerateFlags adds the generate task's flags to the llm workload's.
func addGenerateFlags(fs *pflag.FlagSet, o *WorkloadOptions) {
	fs.IntVar(&o.Generate.Prompt, "prompt", 0, "generate: the prompt's token ids per sequence, drawn uniformly below the vocabulary from --seed (default 512 at full scale, 32 small, 128 demo)")
	fs.IntVar(&o.Generate.Tokens, "tokens", 0, "generate: the tokens each sequence generates, the first from the prompt's pass and each other from one pass of its own (default 128 at full scale, 8 small, 32 demo)")
	fs.StringVar(&o.contextText, "context", "", "generate: the positions each decoder layer's key-value cache holds, allocated whole before the first pass, or max: the model's max_position_embeddings (fit: the longest that the fastest configuration fits) (default: what the generation needs, prompt + tokens − 1)")
	fs.StringVar(&o.promptIDsText, "prompt-ids", "", "generate: the prompt of every sequence as a comma list of token ids instead of drawn ones (for comparing with another tool); sets --prompt to its length")
	fs.StringVar(&o.kvDTypeText, "kv-dtype", "", "generate: the type the key-value caches store their keys and values in, f32, f16 or bf16, whatever --precision is (default: --precision's: f32 under fp32, bf16 under bf16, f16 under fp16)")
}

// checkTaskFlags refuses the generate task for a workload other than
// llm, and the generate task's flags for the other tasks; it reads
// --prompt-ids.
func (o *WorkloadOptions) checkTaskFlags(fs *pflag.FlagSet) error {
	if o.Task == bench.TaskGenerate && o.Workload.Name != models.LLM.Name {
		return fmt.Errorf("the generate task is the llm workload's (gpuz llm generate), not %s's", o.Workload.Name)
	}
	for _, name := range generateFlags {
		if f := fs.Lookup(name); f != nil && f.Changed && o.Task != bench.TaskGenerate {
			return fmt.Errorf("--%s is the generate task's (gpuz llm generate), not %s's", name, o.Task)
		}
	}
	if o.Task != bench.TaskGenerate {
		return nil
	}
	o.promptGiven, o.tokensGiven = fs.Changed("prompt"), fs.Changed("tokens")
	if fs.Changed("context") {
		if err := o.parseContext(); err != nil {
			return err
		}
	}
	for _, name := range []string{"seq-len", "samples"} {
		if f := fs.Lookup(name); f != nil && f.Changed {
			return fmt.Errorf("--%s does not size a generation: --prompt, --tokens and --context do, --batch the sequences", name)
		}
	}
	if fs.Changed("kv-dtype") {
		p, ok := kvDTypes[o.kvDTypeText]
		if !ok {
			return fmt.Errorf("--kv-dtype %q: want f32, f16 or bf16", shortText(o.kvDTypeText))
		}
		o.Generate.KVDType = p
	}
	if fs.Changed("prompt-ids") {
		ids, err := parsePromptIDs(o.promptIDsText)
		if err != nil {
			return err
		}
		if fs.Changed("prompt") && o.Generate.Prompt != len(ids) {
			return fmt.Errorf("--prompt %d and --prompt-ids of %d ids disagree (--prompt-ids sets the prompt's length)", o.Generate.Prompt, len(ids))
		}
		o.Generate.PromptIDs, o.Generate.Prompt = ids, len(ids)
	}
	return nil
}

// parseContext reads --context: a positive number of positions, or max.
func (o *WorkloadOptions) parseContext() error {
	if o.contextText == "max" {
		o.Generate.ContextMax = true
		return nil
	}
	n, err := strconv.ParseInt(o.contextText, 10, 64)
	switch {
	case err != nil && strings.TrimLeft(o.contextText, "+-0123456789") == "" && o.contextText != "":
		return fmt.Errorf("--context %s is out of range", shortText(o.contextText))
	case err != nil:
		return fmt.Errorf("--context: %q is not a number of positions or max", shortText(o.contextText))
	case n <= 0:
		return fmt.Errorf("--context must be positive, got %d", n)
	case n > math.MaxInt32:
		return fmt.Errorf("--context %d is out of range", n)
	}
	o.Generate.Context = int(n)
	return nil
}

// maxPromptIDs bounds --prompt-ids' list.
const maxPromptIDs = 1 << 20

// parsePromptIDs reads --prompt-ids: a comma list of token ids, each a
// decimal integer from 0.
func parsePromptIDs(s string) ([]int, error) {
	words := strings.Split(s, ",")
	if len(words) > maxPromptIDs {
		return nil, fmt.Errorf("--prompt-ids: %d ids, at most %d", len(words), maxPromptIDs)
	}
	ids := make([]int, len(words))
	for i, w := range words {
		id, err := strconv.ParseUint(strings.TrimSpace(w), 10, 31)
		if err != nil {
			return nil, fmt.Errorf("--prompt-ids: %q (at %d) is not a token id (a decimal integer from 0)", shortText(w), i)
		}
		ids[i] = int(id)
	}
	return ids, nil
}

// shortText is s as an error quotes it: its first 40 bytes.
func shortText(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// generateSizes gives a generation's sizes to the llm workload: its
// sequences (--batch, 1 unless given) are its samples and its one batch,
// its prompt the sequence length of the data the prompts are drawn from;
// --prompt and --tokens default to the scale's. It runs before the
// workload is configured.
func (o *WorkloadOptions) generateSizes() error {
	g := &o.Generate
	def, ok := generateDefaults[o.Scale]
	if !ok {
		def = generateDefaults[models.ScaleFull]
	}
	if g.Prompt == 0 && g.PromptIDs == nil && !o.promptGiven {
		g.Prompt = def[0]
	}
	if g.Tokens == 0 && !o.tokensGiven {
		g.Tokens = def[1]
	}
	switch {
	case g.Prompt <= 0:
		return fmt.Errorf("--prompt must be positive, got %d", g.Prompt)
	case g.Tokens <= 0:
		return fmt.Errorf("--tokens must be positive, got %d", g.Tokens)
	case g.Context > 0 && g.Context < g.Prompt+g.Tokens-1:
		return fmt.Errorf("--context %d cannot hold a prompt of %d and %d generated tokens: it needs %d positions (the last token is never fed back)", g.Context, g.Prompt, g.Tokens, g.Prompt+g.Tokens-1)
	}
	batch, ok := o.Sizes["batch"]
	if !ok {
		batch = 1
	}
	o.Sizes["batch"], o.Sizes["samples"], o.Sizes["seq-len"] = batch, batch, g.Prompt
	return nil
}

// tasksOf names a workload's tasks as its command's use line reads them.
func tasksOf(w models.Workload) string {
	if w.Name == models.LLM.Name {
		return "train|eval|generate"
	}
	return "train|eval"
}

// generateWords are the generate task's flags as fit's command lines
// give them: --prompt (or --prompt-ids), --tokens, and --context when
// given as a number (fit's --context max plans the least context a
// generation needs, and its recommendation says the longest).
func (o *WorkloadOptions) generateWords() []string {
	g := o.Generate
	var words []string
	if g.PromptIDs != nil {
		words = append(words, "--prompt-ids", o.promptIDsText)
	} else {
		words = append(words, "--prompt", strconv.Itoa(g.Prompt))
	}
	words = append(words, "--tokens", strconv.Itoa(g.Tokens))
	if g.Context > 0 && !g.ContextMax { // fit plans max at the least context, and says the longest apart
		words = append(words, "--context", strconv.Itoa(g.Context))
	}
	return words
}
