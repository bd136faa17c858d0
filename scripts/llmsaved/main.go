// Command llmsaved lists the activations gpuz saves for the backward pass
// of the llm workload's training step, value by value: the block each
// travels with, the op that computes it, its shape and storage, and the
// backward ops that read it. Their sum is what `gpuz plan llm train`
// reports as saved_activations; scripts/test-llm-saved.sh prints it beside
// PyTorch's list (scripts/torch_llm.py saved --list) for docs/llm.md:
//
//	go run ./scripts/llmsaved -model scripts/testdata/llm-llama-gqa.json -seq-len 24 -batch 2 [-layers N] [-precision bf16] [-recompute blocks] [-json]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"gpuz/internal/engine"
	"gpuz/internal/hfconfig"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// options are the command's flags.
type options struct {
	model                string
	seqLen, batch, layer int
	precision, recompute string
	attention            string
	json                 bool
}

func main() {
	var o options
	flag.StringVar(&o.model, "model", "", "the model: a preset, a config.json or a directory holding one")
	flag.IntVar(&o.seqLen, "seq-len", 0, "tokens per sequence")
	flag.IntVar(&o.batch, "batch", 1, "sequences per batch")
	flag.IntVar(&o.layer, "layers", 0, "decoder layers built (0: all of the model's)")
	flag.StringVar(&o.precision, "precision", "fp32", "fp32, bf16 or fp16")
	flag.StringVar(&o.recompute, "recompute", "none", "none or blocks")
	flag.StringVar(&o.attention, "attention", "", "eager or fused (default: the llm workload's, fused)")
	flag.BoolVar(&o.json, "json", false, "print JSON instead of a table")
	flag.Parse()
	if err := run(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "llmsaved:", err)
		os.Exit(2)
	}
}

// listing is what the command prints.
type listing struct {
	SavedBytes int64        `json:"saved_bytes"`
	ArenaBytes int64        `json:"arena_bytes"`
	Values     []savedValue `json:"values"`
}

// savedValue is one engine.SavedValue as JSON.
type savedValue struct {
	Block  string   `json:"block"`
	Op     string   `json:"op"`
	Shape  []int    `json:"shape"`
	Dtype  string   `json:"dtype"`
	Bytes  int64    `json:"bytes"`
	ReadBy []string `json:"read_by"`
}

// run compiles the training step o describes and writes its saved values
// to w.
func run(w io.Writer, o options) error {
	if o.model == "" || o.seqLen <= 0 || o.batch <= 0 {
		return errors.New("give -model, -seq-len and -batch")
	}
	m, err := hfconfig.Load(o.model)
	if err != nil {
		return fmt.Errorf("-model: %w", err)
	}
	prec, err := levers.ParsePrecision(o.precision)
	if err != nil {
		return err
	}
	rec, err := levers.ParseRecompute(o.recompute)
	if err != nil {
		return err
	}
	layers := o.layer
	if layers == 0 {
		layers = m.Config.Layers
	}
	cfg := models.LLMConfig{Model: m, Layers: layers, SeqLen: o.seqLen, Attention: levers.Attention(o.attention),
		Feed: models.Feed{Samples: o.batch, Batch: o.batch, Epochs: 1}}
	model, err := cfg.Build()
	if err != nil {
		return fmt.Errorf("building the model: %w", err)
	}
	sc, err := engine.Compile(engine.Spec{Inputs: model.Inputs(), Blocks: model.Blocks, Output: model.Loss,
		Train: true, Recompute: rec, Precision: prec})
	if err != nil {
		return fmt.Errorf("compiling the training step: %w", err)
	}
	b := sc.Bytes()
	l := listing{SavedBytes: b.Saved, ArenaBytes: b.Arena, Values: []savedValue{}}
	for _, v := range sc.SavedValues() {
		dtype := "float32"
		if v.Half {
			dtype = string(prec)
		}
		l.Values = append(l.Values, savedValue{Block: v.Block, Op: v.Op, Shape: v.Shape, Dtype: dtype, Bytes: v.Bytes, ReadBy: v.ReadBy})
	}
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(l)
	}
	fmt.Fprintf(w, "%-8s %-20s %-16s %-8s %9s  %s\n", "block", "op", "shape", "dtype", "bytes", "read by")
	for _, v := range l.Values {
		fmt.Fprintf(w, "%-8s %-20s %-16s %-8s %9d  %s\n", v.Block, v.Op, strings.Trim(fmt.Sprint(v.Shape), "[]"), v.Dtype, v.Bytes, strings.Join(v.ReadBy, ", "))
	}
	fmt.Fprintf(w, "saved %d bytes in %d values; arena %d bytes\n", l.SavedBytes, len(l.Values), l.ArenaBytes)
	return nil
}
