package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"gorgonia.org/gorgonia"

	"gpuz/internal/gguf"
	"gpuz/internal/models"
	"gpuz/internal/quant"
)

// ExportOptions are the arguments of gpuz llm export.
type ExportOptions struct {
	IO *IOStreams
	// Model is --model, as the llm workload's; Layers the decoder layers
	// written (0: all of them), as --layers builds.
	Model  string
	Layers int
	// Seed draws the weights, as a run's --seed does.
	Seed uint64
	// GGUF names the file to write; Type is the matrices' type, f16 or
	// f32; Weights, when not empty, the block type the projections and
	// the token embedding are quantized to: q8_0, q4_0, q4_k or q6_k.
	GGUF    string
	Type    string
	Weights string
}

// newExportCmd builds gpuz llm export --gguf FILE; runF, when not nil, is
// called instead of exportRun.
func newExportCmd(ios *IOStreams, runF func(context.Context, *ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "export --gguf FILE",
		Short: "Write the model, with the weights a run draws, as a GGUF file for llama.cpp",
		Long: `export writes the llm workload's model as a GGUF file that llama.cpp loads
(its llama architecture: the tensor names and metadata llama.cpp's
convert_hf_to_gguf.py writes), with the weights a run of the same --model,
--layers and --seed draws, so that llama.cpp and gpuz run the same model.
The matrices are F16 (--type f32 keeps them exact), the norms and biases
F32. --weights q8_0, q4_0, q4_k or q6_k quantizes the projections and the
token embedding as llama.cpp's quantizer does, byte for byte (the output
head, when untied, stays of --type; every quantized row must be a whole
number of blocks, 32 weights or Q4_K's and Q6_K's 256); nf4 has no GGUF
type. The vocabulary is synthetic (tokens t0, t1, … with <unk>, <s> and
</s> at 0, 1 and 2): the model is fed token ids, not text. The Llama
family (llama, mistral, qwen2) is written; GPT-2 is not. The file is
written whole or not at all. docs/llm.md has the worked example with
llama.cpp.`,
		Example: `  gpuz llm export --model smollm2-135m --gguf smollm2.gguf
  gpuz llm export --model llama-3.2-1b --layers 4 --type f32 --seed 7 --gguf l4.gguf
  gpuz llm export --model smollm2-135m --weights q8_0 --gguf smollm2-q8_0.gguf`,
		Args: noArgs,
		RunE: runWith(opts, runF, exportRun),
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Model, "model", defaultLLMModel, "the model: a preset (gpuz llm --list-models), a config.json, a directory holding one, or a GGUF file")
	fs.IntVar(&opts.Layers, "layers", 0, "write the first N decoder layers only, as a run's --layers builds (0: all)")
	fs.Uint64Var(&opts.Seed, "seed", 1, "seed of the weights, as a run's --seed")
	fs.StringVar(&opts.GGUF, "gguf", "", "the GGUF file to write (required)")
	fs.StringVar(&opts.Type, "type", "f16", "the matrices' type: f16 or f32")
	fs.StringVar(&opts.Weights, "weights", "", "quantize the projections and the token embedding to q8_0, q4_0, q4_k or q6_k, llama.cpp's blocks (default: of --type)")
	return cmd
}

// exportRun checks the options, draws the weights and writes the file.
// Bad options, a model GGUF's llama architecture cannot hold and an
// output that cannot be written are usage errors; the file is replaced
// only once it is complete, and a signal (ctx) stops the writing and
// leaves the old file as it was.
func exportRun(ctx context.Context, opts *ExportOptions) error {
	if opts.GGUF == "" {
		return usagef("export needs --gguf FILE")
	}
	if err := checkOutputs(outputFile{"--gguf", opts.GGUF, false}); err != nil {
		return err
	}
	var typ gguf.Type
	switch strings.ToLower(opts.Type) {
	case "f16":
		typ = gguf.F16
	case "f32":
		typ = gguf.F32
	default:
		return usagef("--type %q: want f16 or f32", opts.Type)
	}
	weights, err := exportWeights(opts.Weights)
	if err != nil {
		return err
	}
	if opts.Model == "" {
		return usagef("--model: empty (want a preset, a config.json, a directory holding one or a GGUF file; gpuz llm --list-models lists the presets)")
	}
	m, err := loadModel(ctx, opts.Model)
	if errors.Is(err, errInterrupted) {
		return err
	}
	if err != nil {
		return usagef("--model: %w", err)
	}
	layers := opts.Layers
	switch {
	case layers < 0:
		return usagef("--layers must not be negative, got %d", layers)
	case layers == 0:
		layers = m.Layers
	case layers > m.Layers:
		return usagef("--layers (%d) must be at most the model's %d layers", layers, m.Layers)
	}
	file := gguf.Llama{Config: m.Config, Layers: layers, Name: modelName(m), Type: typ}
	if err := file.Check(); err != nil {
		return usagef("--model %s: %w", opts.Model, err)
	}
	file.Weights = weights
	if err := file.Check(); err != nil {
		return usagef("--weights %s: %w", opts.Weights, err)
	}
	model, err := models.LLMConfig{Model: m, Layers: layers, SeqLen: 1, Feed: models.Feed{Samples: 1, Batch: 1, Epochs: 1}}.Build()
	if err != nil {
		return usagef("--model %s: %w", opts.Model, err)
	}
	constants := map[*gorgonia.Node]bool{}
	for _, c := range model.Constants {
		constants[c.Node] = true
	}
	err = writeFile(opts.GGUF, "the GGUF model", func(w io.Writer) error {
		lw, err := file.NewWriter(w)
		if err != nil {
			return err
		}
		err = model.InitParams(opts.Seed, func(p *gorgonia.Node, values []float32) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if constants[p] {
				return nil
			}
			return lw.Param(p.Name(), values)
		})
		if err != nil {
			return err
		}
		return lw.Close()
	})
	if err != nil {
		return err
	}
	matrices := typ.String() + " matrices"
	if weights.Quantized() {
		matrices = weights.String() + " matrices"
		if !m.TieEmbeddings {
			matrices += ", the head " + typ.String()
		}
	}
	fmt.Fprintf(opts.IO.Out, "wrote %s: %s, %d of %d layers, %s, %d parameters, seed %d\n",
		opts.GGUF, modelName(m), layers, m.Layers, matrices, model.ParamCount(), opts.Seed)
	return nil
}

// exportWeights reads export's --weights: the block type the
// projections and the token embedding are quantized to, or F32 (Llama's
// "none") when it is empty.
func exportWeights(text string) (gguf.Type, error) {
	if text == "" {
		return gguf.F32, nil
	}
	k, err := quant.Parse(text)
	if err != nil {
		return 0, usagef("--weights: %w", err)
	}
	t, ok := gguf.TypeOf(k)
	switch {
	case k == quant.NF4:
		return 0, usagef("--weights nf4: GGUF has no NF4 type (it is bitsandbytes'); export writes q8_0, q4_0, q4_k or q6_k")
	case !ok || !t.Quantized():
		return 0, usagef("--weights %v: export quantizes to q8_0, q4_0, q4_k or q6_k; the float matrices' type is --type's (f16 or f32)", k)
	}
	return t, nil
}
