package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"gpuz/internal/bench"
	"gpuz/internal/hfconfig"
	"gpuz/internal/levers"
	"gpuz/internal/quant"
)

// addWeightsFlag adds --weights, the storage of the frozen weights, to
// the llm workload.
func addWeightsFlag(fs *pflag.FlagSet, o *WorkloadOptions) {
	fs.StringVar(&o.weightsText, "weights", "", "the storage of the weights that are not trained (eval, generate, LoRA's base): f32, f16 or bf16 (the floats of --precision, which f16 and bf16 set when it is not given) or a quantized kind, q8_0, q4_0, q4_k or q6_k (llama.cpp's GGUF blocks, 8.5, 4.5, 4.5 and 6.5625 bits a weight) or nf4 (bitsandbytes' NormalFloat with double quantization, 4.13 bits, as QLoRA), for every projection of the decoder's layers, the embedding and the output head then in bf16 unless --precision says otherwise, the norms in fp32 (default: --precision's; a GGUF --model's own kind); fit ranks q8_0 and q4_k beside the floats unless a kind is given, a float kind keeping the floats")
}

// addLoadWeightsFlag adds --load-weights to the llm runs.
func addLoadWeightsFlag(fs *pflag.FlagSet, o *WorkloadOptions) {
	fs.BoolVar(&o.LoadWeights, "load-weights", false, "with --model FILE.gguf: compute with the file's own weights, read one tensor at a time from the memory-mapped file (a projection stored in the file's kind takes its blocks as they are; any other is dequantized, and quantized again if --weights says another kind), instead of weights drawn at random")
}

// loadWeightsFile returns the GGUF table --load-weights reads, nil
// without the flag; an error when --model is not a GGUF file.
func (o *WorkloadOptions) loadWeightsFile() (*hfconfig.GGUF, error) {
	switch {
	case !o.LoadWeights:
		return nil, nil
	case o.gguf == nil:
		return nil, fmt.Errorf("--load-weights reads a GGUF file's weights; --model %s is not one", shortText(o.Model))
	}
	return o.gguf, nil
}

// weightsKind reads --weights, or a GGUF file's kind when it is not
// given, into the levers: a quantized kind into
// Weights, with Precision bf16 when --precision is not given (the
// embedding and the output head in 16 bits, as llama.cpp's and
// bitsandbytes' tools leave them); f16 and bf16 into Precision, when
// --precision is not another. A GGUF file's f16 or bf16 sets Precision
// only where the weights are frozen, evaluation and generation, and only
// when --precision is not given (training's weights are its own, at
// --precision's).
func (o *WorkloadOptions) weightsKind(fs *pflag.FlagSet) error {
	text := o.weightsText
	fromFile := text == "" && o.fileWeights != quant.F32 && (o.fileWeights.Quantized() || o.Task != bench.TaskTrain)
	if fromFile {
		text = o.fileWeights.String() // as the GGUF file stores them
	}
	if text == "" {
		return nil
	}
	k, err := quant.Parse(text)
	if err != nil {
		return fmt.Errorf("--weights: %w", err)
	}
	floats := map[quant.Kind]levers.Precision{quant.F32: levers.FP32, quant.F16: levers.FP16, quant.BF16: levers.BF16}
	p, float := floats[k]
	switch {
	case !float && o.Task == bench.TaskTrain && o.LoRA.Rank == 0 && fromFile:
		return fmt.Errorf("the file stores its projections in %v, a kind for frozen weights, and training changes every weight: train LoRA's adapters on the quantized base with --lora R, or the whole model in floats with --weights f32", k)
	case !float && o.Task == bench.TaskTrain && o.LoRA.Rank == 0:
		return fmt.Errorf("--weights %v stores frozen weights, and training changes every weight: train LoRA's adapters on the quantized base with --lora R", k)
	case !float:
		o.Weights = k
		if !fs.Changed("precision") {
			o.Precision = levers.BF16 // the embedding and the head in 16 bits, as the tools leave them
		}
	case fs.Changed("precision") && o.Precision != p && fromFile:
		return nil
	case fs.Changed("precision") && o.Precision != p:
		return fmt.Errorf("--weights %v stores the weights in %s, and --precision is %s: give one of them, or the same", k, p, o.Precision)
	default:
		o.Precision = p
	}
	return nil
}
