package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"gpuz/internal/bench"
	"gpuz/internal/levers"
	"gpuz/internal/quant"
	"gpuz/internal/results"
	"gpuz/internal/termsafe"
	"gpuz/internal/units"
)

// WriteHeader writes a few lines that describe the run: the workload, the
// sizes of its data and model, and the host's BLAS and threads. The scale,
// the BLAS and the threads are left out when empty or zero. The threads are
// those in force; a warning line follows when they are fewer than asked.
func WriteHeader(w io.Writer, h bench.Header) error {
	var b strings.Builder
	// The model's name may be a snapshot directory's, and the device's a
	// profile file's: both are printed escaped (termsafe).
	fmt.Fprintf(&b, "gpuz %s %s", termsafe.String(h.Model), h.Task)
	if h.Scale != "" {
		fmt.Fprintf(&b, " (scale %s)", h.Scale)
	}
	generate := bench.Task(h.Task) == bench.TaskGenerate
	if generate {
		fmt.Fprintf(&b, ": %s, each a prompt of %s then %s generated, greedily\n", plural(int64(h.Batch), "sequence"), plural(int64(h.Prompt), "token"), plural(int64(h.Tokens), "token"))
	} else {
		fmt.Fprintf(&b, ": %s in batches of %d", plural(int64(h.Samples), "sample"), h.Batch)
		if h.SeqLen > 0 {
			fmt.Fprintf(&b, ", sequences of %s", plural(int64(h.SeqLen), "token"))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "data: %s   model: %s parameters, %s\n", units.Bytes(h.DataBytes), units.Count(h.Params), units.Bytes(h.ParamBytes))
	if generate {
		fmt.Fprintf(&b, "kv cache: %s (each decoder layer's keys and values at its kv heads, %s, %s a sequence, allocated whole)\n", units.Bytes(h.KVCacheBytes), kvCacheType(h), plural(int64(h.Context), "position"))
	}
	switch {
	case h.LoRA != "" && bench.Task(h.Task) == bench.TaskEval:
		fmt.Fprintf(&b, "lora: %s: %s adapter parameters beside the model's own\n", h.LoRA, units.Count(h.TrainedParams))
	case h.LoRA != "":
		fmt.Fprintf(&b, "lora: %s: %s parameters trained (the adapters), the model's own frozen\n", h.LoRA, units.Count(h.TrainedParams))
	}

	var host []string
	if h.BLAS != "" {
		host = append(host, "BLAS "+h.BLAS)
	}
	if h.Threads > 0 {
		host = append(host, plural(int64(h.Threads), "thread"))
	}
	if len(host) > 0 {
		fmt.Fprintf(&b, "host: %s\n", strings.Join(host, ", "))
	}
	b.WriteString(envLine(h.Env))
	if h.ThreadsWarning != "" {
		fmt.Fprintf(&b, "warning: %s\n", h.ThreadsWarning)
	}
	if h.BLASWarning != "" {
		fmt.Fprintf(&b, "warning: %s\n", h.BLASWarning)
	}
	if h.GPU != "" {
		fmt.Fprintf(&b, "devices: cuda and cache on %s, cpu on host\n", termsafe.String(h.GPU))
	}
	if h.TakeBytes > 0 {
		fmt.Fprintf(&b, "held: %s on %s by --take\n", units.Bytes(h.TakeBytes), termsafe.String(h.GPU))
	}
	switch attention := levers.Attention(h.Attention); {
	case generate:
		// A generation attends through its caches whatever the lever.
	case attention == levers.AttentionFused:
		b.WriteString("attention: fused (each row's output and log-sum-exp kept; the probabilities computed again in the backward pass)\n")
	case attention == levers.AttentionEager:
		b.WriteString("attention: eager (each layer's probabilities kept for the backward pass)\n")
	}
	if note := weightsNote(h); note != "" {
		b.WriteString(note + "\n")
	}
	if recomputes(h) {
		fmt.Fprintf(&b, "recompute: %s (each block's forward runs again before its gradients; only block inputs are kept)\n", h.Recompute)
	}
	if h.GradAccum > 1 {
		fmt.Fprintf(&b, "grad-accum: %d micro-batches of %d samples a step (their gradients added, one optimizer step on the batch's mean)\n", h.GradAccum, h.Batch/h.GradAccum)
	}
	if p := precisionOf(h); p.Half() {
		line := precisionNote(p)
		if lossScaled(h) {
			line += "; the loss scaled as PyTorch's GradScaler does, skipping a step whose gradients overflow"
		}
		b.WriteString(line + "\n")
		if h.HalfProducts != "" {
			fmt.Fprintf(&b, "16-bit products: %s on the host and sim, cuBLAS GemmEx on a CUDA GPU\n", h.HalfProducts)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// kvCacheType names the type a generation's key-value caches store: float32
// (also for a header that predates the field), bf16 or fp16.
func kvCacheType(h bench.Header) string {
	if t := levers.Precision(h.KVCacheType); t.Half() {
		return t.String()
	}
	return "float32"
}

// plural formats n and the noun, adding an s unless n is 1.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}

// WriteEpoch writes one line for an epoch of task, as in
//
//	train: 0  mean loss: 0.3269  time: 4.35 s  (warm-up)
//	eval: 3  output mean: 0.01234  time: 0.617 s
//
// marking it as a warm-up epoch when warmup is true.
//
// An epoch on a device other than the host says which, so that a time from
// the simulated GPU is never read as a GPU time:
//
//	train: 1  mean loss: 0.3244  time: 4.48 s  on sim:8GiB
func WriteEpoch(w io.Writer, task bench.Task, e bench.Epoch, warmup bool, device string) error {
	label := "value"
	switch task {
	case bench.TaskTrain:
		label = "mean loss"
	case bench.TaskEval:
		label = "output mean"
	}
	suffix := ""
	if device != "" && device != "host" {
		suffix = "  on " + termsafe.String(device)
	}
	if warmup {
		suffix += "  (warm-up)"
	}
	if g := e.Generation; g != nil {
		_, err := fmt.Fprintf(w, "%s: %d  prefill: %s in %s (%s)  decode: %s in %s (%s)  time: %s%s\n", task, e.Index,
			plural(int64(g.PrefillTokens), "token"), units.Seconds(results.Duration(g.PrefillSeconds)), tokenRate(g.PrefillTokens, g.PrefillSeconds),
			plural(int64(g.DecodeTokens), "token"), units.Seconds(results.Duration(g.DecodeSeconds)), tokenRate(g.DecodeTokens, g.DecodeSeconds),
			units.Seconds(e.Duration()), suffix)
		return err
	}
	_, err := fmt.Fprintf(w, "%s: %d  %s: %.4g  time: %s%s\n", task, e.Index, label, e.Value, units.Seconds(e.Duration()), suffix)
	return err
}

// tokenRate writes n tokens over seconds as tokens per second, "-" where
// none were timed.
func tokenRate(n int, seconds float64) string {
	if r := perSecond(n, seconds); r != na {
		return r + " tokens/s"
	}
	return na
}

// WriteModeStart writes the line that opens a mode's section of the
// epoch lines, after a blank line: "== cuda on sim:8GiB ==".
func WriteModeStart(w io.Writer, mode bench.Mode, device string) error {
	_, err := fmt.Fprintf(w, "\n== %s on %s ==\n", mode, termsafe.String(device))
	return err
}

// WriteModeEnd writes, for a mode that did not end ok, the line that says
// why, as soon as it ends and in its own section:
//
//	cuda: OOM: needs 5.57 GiB, 4.00 GiB of 8.00 GiB free
//
// A mode that got no device (unavailable, skipped before it started) had
// no section yet; it gets one first, "== cuda ==". A mode that ended ok
// writes nothing: its epoch lines said all.
func WriteModeEnd(w io.Writer, mode bench.Mode, device string, s bench.Status) error {
	if s.Kind == bench.StatusOK {
		return nil
	}
	var b strings.Builder
	if device == "" {
		fmt.Fprintf(&b, "\n== %s ==\n", mode)
	}
	fmt.Fprintf(&b, "%s: %s\n", mode, s)
	_, err := io.WriteString(w, b.String())
	return err
}

// weightsNote says which weights a quantized kind stored (--weights):
// "weights q4_0 (4.5 bits a weight): …"; "" when the weights are floats.
func weightsNote(h bench.Header) string {
	k, err := quant.Parse(h.Weights)
	if err != nil || !k.Quantized() {
		return ""
	}
	what := "the decoder layers' projections and the token embedding's table"
	if k == quant.NF4 {
		what = "the decoder layers' projections"
	}
	return fmt.Sprintf("weights %s (%.3g bits a weight): %s, read by kernels that decode each block as they go; the output head, the norms and the rest in floats", k, k.BitsPerWeight(), what)
}

// precisionOf is the run's storage precision; "" (a header from before
// the lever) reads as fp32.
func precisionOf(h bench.Header) levers.Precision {
	return levers.Precision(h.Precision).Setting()
}

// lossScaled reports whether the run of h scaled its loss dynamically:
// fp16 training, which skips the steps whose scaled gradients overflow.
func lossScaled(h bench.Header) bool {
	return bench.Task(h.Task) == bench.TaskTrain && precisionOf(h) == levers.FP16
}

// precisionNote says what a run at the 16-bit precisions ps stored in 16
// bits and what in fp32: "precision bf16: products and weights stored in 16
// bits, …", "precision bf16, fp16: …" for a sweep over both.
func precisionNote(ps ...levers.Precision) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.String()
	}
	return "precision " + strings.Join(names, ", ") + ": products and weights stored in 16 bits, softmax, layer norm and losses in fp32 (automatic mixed precision)"
}

// recomputes reports whether the run of h recomputed activations: a
// training run with --recompute other than none (evaluation saves none).
func recomputes(h bench.Header) bool {
	return bench.Task(h.Task) == bench.TaskTrain && levers.Recompute(h.Recompute).On()
}
