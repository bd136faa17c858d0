// Command planvsllamacpp prints, for one GGUF file, one markdown table of
// the host memory three sources give for generation on the CPU: gpuz's
// plan (`gpuz plan llm generate cpu --json`, read from a file), the
// buffers llama.cpp allocated (scripts/llamacpp_buffers.mjs's JSON, read
// from a file), and gguf-parser-go's estimate for llama.cpp
// (GGUFFile.EstimateLLaMACppRun, computed here with no layer offloaded,
// one sequence, the given context and batch, and flash attention as
// asked). scripts/plan-vs-llamacpp.sh runs the three and this; docs/llm.md
// ("Plans against llama.cpp") shows the tables and explains each
// difference.
//
//	go run ./scripts/planvsllamacpp -gpuz PLAN.json -llamacpp BUFFERS.json -context 2048 -batch 512 [-flash-attention=false] FILE.gguf
//
// Sizes are in MiB (2^20 bytes) with two decimals, as llama.cpp logs
// them.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	parser "github.com/gpustack/gguf-parser-go"
)

// options are the command's flags and argument.
type options struct {
	gguf, gpuzPlan, llamaCpp string
	context, batch           int
	flashAttention           bool
}

// gpuzPlan holds the fields of gpuz's plan JSON the table reads.
type gpuzPlan struct {
	Header struct {
		Weights     string `json:"weights"`
		Precision   string `json:"precision"`
		Prompt      int    `json:"prompt"`
		Context     int    `json:"context"`
		KVCacheType string `json:"kv_cache_type"`
	} `json:"header"`
	Bytes *struct {
		Parameters int64 `json:"parameters"`
		KVCache    int64 `json:"kv_cache"`
		Arena      int64 `json:"arena"`
		Inputs     int64 `json:"inputs"`
	} `json:"bytes"`
}

// llamaCppBuffers holds what scripts/llamacpp_buffers.mjs prints: each
// kind of buffer's size in MiB by the backend buffer type that holds it.
type llamaCppBuffers struct {
	ModelSizeBytes int64 `json:"model_size_bytes"`
	Context        struct {
		FlashAttention *bool  `json:"flash_attention"`
		NCtx           int    `json:"n_ctx"`
		NBatch         int    `json:"n_batch"`
		NUbatch        int    `json:"n_ubatch"`
		KVKType        string `json:"kv_k_type"`
		KVVType        string `json:"kv_v_type"`
	} `json:"context"`
	Buffers map[string]map[string]float64 `json:"buffers_mib"`
}

// mib is a size in MiB.
type mib = float64

// row is one line of the table: what it counts and each source's size,
// nil where the source has no such part or counts it in another row (the
// name says which).
type row struct {
	name                     string
	gpuz, llamaCpp, estimate *mib
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "planvsllamacpp:", err)
		os.Exit(2)
	}
}

// run parses args and writes the table to w.
func run(args []string, w io.Writer) error {
	var o options
	fs := flag.NewFlagSet("planvsllamacpp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.gpuzPlan, "gpuz", "", "gpuz plan's JSON (gpuz plan llm generate cpu --json FILE)")
	fs.StringVar(&o.llamaCpp, "llamacpp", "", "scripts/llamacpp_buffers.mjs's JSON")
	fs.IntVar(&o.context, "context", 2048, "the context's positions")
	fs.IntVar(&o.batch, "batch", 512, "llama.cpp's n_batch and n_ubatch")
	fs.BoolVar(&o.flashAttention, "flash-attention", true, "whether llama.cpp runs flash attention")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("want one GGUF file after the flags")
	}
	o.gguf = fs.Arg(0)
	if o.gpuzPlan == "" || o.llamaCpp == "" {
		return errors.New("-gpuz PLAN.json and -llamacpp BUFFERS.json are required")
	}
	if o.context <= 0 || o.batch <= 0 {
		return fmt.Errorf("-context (%d) and -batch (%d) must be positive", o.context, o.batch)
	}
	var plan gpuzPlan
	if err := readJSON(o.gpuzPlan, &plan); err != nil {
		return err
	}
	if plan.Bytes == nil {
		return fmt.Errorf("-gpuz %s: no \"bytes\": not gpuz plan's JSON", o.gpuzPlan)
	}
	var llama llamaCppBuffers
	if err := readJSON(o.llamaCpp, &llama); err != nil {
		return err
	}
	if llama.Context.NCtx == 0 || len(llama.Buffers["model"]) == 0 {
		return fmt.Errorf("-llamacpp %s: no context or model buffer: not llamacpp_buffers.mjs's JSON", o.llamaCpp)
	}
	f, err := parser.ParseGGUFFile(o.gguf)
	if err != nil {
		return fmt.Errorf("%s: %w", o.gguf, err)
	}
	estOpts := []parser.GGUFRunEstimateOption{
		parser.WithLLaMACppContextSize(int32(o.context)),
		parser.WithLLaMACppLogicalBatchSize(int32(o.batch)),
		parser.WithLLaMACppPhysicalBatchSize(int32(o.batch)),
		parser.WithLLaMACppOffloadLayers(0),
		parser.WithParallelSize(1),
	}
	if o.flashAttention {
		estOpts = append(estOpts, parser.WithFlashAttention())
	}
	est := f.EstimateLLaMACppRun(estOpts...)
	write(w, o, plan, llama, est)
	return nil
}

// readJSON decodes the file at path into v.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// write prints the table and a line naming the settings each source ran
// with.
func write(w io.Writer, o options, plan gpuzPlan, llama llamaCppBuffers, est parser.LLaMACppRunEstimate) {
	bytes := func(n int64) *mib { v := float64(n) / (1 << 20); return &v }
	ubytes := func(n parser.GGUFBytesScalar) *mib { return bytes(int64(n)) }
	// logged sums one kind of llama.cpp's buffers over the buffer types
	// holding it.
	logged := func(kind string) *mib {
		m := llama.Buffers[kind]
		if len(m) == 0 {
			return nil
		}
		var sum mib
		for _, v := range m {
			sum += v
		}
		return &sum
	}
	cpu := est.Devices[0]
	// The model's buffers: the file's tensors mapped (CPU_Mapped, or CPU
	// without mmap) on the weights' row, each other (CPU_REPACK: copies
	// of the tensors in interleaved blocks) on a row of its own.
	var mapped *mib
	var others []string
	for name, v := range llama.Buffers["model"] {
		switch name {
		case "CPU_Mapped", "CPU":
			mapped = add(mapped, &v)
		default:
			others = append(others, name)
		}
	}
	slices.Sort(others)
	rows := []row{
		{name: "model weights (llama.cpp: the file's tensors, CPU_Mapped)", gpuz: bytes(plan.Bytes.Parameters), llamaCpp: mapped, estimate: ubytes(cpu.Weight.Sum())},
	}
	for _, name := range others {
		v := llama.Buffers["model"][name]
		rows = append(rows, row{name: "weights copied (llama.cpp: " + name + ")", llamaCpp: &v})
	}
	rows = append(rows, []row{
		{name: "KV cache", gpuz: bytes(plan.Bytes.KVCache), llamaCpp: logged("kv"), estimate: ubytes(cpu.KVCache.Sum())},
		{name: "compute buffer (gpuz: arena)", gpuz: bytes(plan.Bytes.Arena), llamaCpp: logged("compute"), estimate: ubytes(cpu.Computation.Compute + cpu.Computation.Output)},
		{name: "graph inputs (llama.cpp: in the compute buffer)", gpuz: bytes(plan.Bytes.Inputs), estimate: ubytes(cpu.Computation.Input)},
		{name: "output buffer (gpuz: in the arena)", llamaCpp: logged("output")},
		{name: "graph metadata, scheduler (estimate only)", estimate: ubytes(cpu.Computation.Footprint)},
		{name: "loading, vocabulary, output buffer (estimate only)", estimate: ubytes(cpu.Footprint)},
	}...)
	var total row
	total.name = "**total**"
	for _, r := range rows {
		total.gpuz = add(total.gpuz, r.gpuz)
		total.llamaCpp = add(total.llamaCpp, r.llamaCpp)
		total.estimate = add(total.estimate, r.estimate)
	}
	rows = append(rows, total)

	fmt.Fprintf(w, "| %s, MiB | gpuz plan | llama.cpp (logged) | gguf-parser-go estimate |\n", baseName(o.gguf))
	fmt.Fprintln(w, "|---|--:|--:|--:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.name, cell(r.gpuz), cell(r.llamaCpp), cell(r.estimate))
	}
	fa := "unknown"
	if llama.Context.FlashAttention != nil {
		fa = map[bool]string{true: "on", false: "off"}[*llama.Context.FlashAttention]
	}
	fmt.Fprintf(w, "\ngpuz: --weights %s, %s, prompt %d, context %d, KV cache %s. "+
		"llama.cpp: n_ctx %d, n_batch %d, n_ubatch %d, KV cache K %s V %s, flash attention %s; llama_model_size %d bytes. "+
		"gguf-parser-go: context %d, batch %d/%d, flash attention %v, no layer offloaded.\n",
		plan.Header.Weights, plan.Header.Precision, plan.Header.Prompt, plan.Header.Context, plan.Header.KVCacheType,
		llama.Context.NCtx, llama.Context.NBatch, llama.Context.NUbatch, llama.Context.KVKType, llama.Context.KVVType, fa, llama.ModelSizeBytes,
		est.ContextSize, est.LogicalBatchSize, est.PhysicalBatchSize, est.FlashAttention)
}

// add returns a + b, nil when both are.
func add(a, b *mib) *mib {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	v := *a + *b
	return &v
}

// cell formats a size with two decimals, "–" when absent.
func cell(v *mib) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f", *v)
}

// baseName is the last element of a slash-separated path.
func baseName(path string) string {
	return path[strings.LastIndex(path, "/")+1:]
}
