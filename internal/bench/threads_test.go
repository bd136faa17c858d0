package bench

import (
	"strings"
	"testing"
)

// TestHeaderReportsThreadsInForce plays a BLAS that accepts at most 2
// threads: the header reports the 2 in force, not the 5 asked, with a
// warning that says why; a count the BLAS accepts has no warning.
func TestHeaderReportsThreadsInForce(t *testing.T) {
	var applied int
	opts := smallLinearRun(t, TaskEval, ModeCPU)
	opts.setThreads = func(n int) int { applied = min(n, 2); return applied }
	opts.Threads = 5
	plan, err := PlanMemory(opts, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := plan.Header
	if h.Threads != 2 || h.ThreadsRequested != 5 || applied != 2 {
		t.Errorf("header threads %d (requested %d), applied %d; want 2 in force of 5", h.Threads, h.ThreadsRequested, applied)
	}
	if !strings.Contains(h.ThreadsWarning, "5 threads requested, 2 in force") {
		t.Errorf("warning %q, want one naming 5 requested and 2 in force", h.ThreadsWarning)
	}

	opts.Threads = 2
	if plan, err = PlanMemory(opts, PlanOptions{}); err != nil {
		t.Fatal(err)
	}
	if h := plan.Header; h.Threads != 2 || h.ThreadsWarning != "" || h.ThreadsRequested != 0 {
		t.Errorf("2 threads accepted: header %d threads (requested %d), warning %q; want 2, none requested apart and no warning", h.Threads, h.ThreadsRequested, h.ThreadsWarning)
	}
}

// TestRunHeaderThreads runs with the real BLAS at 1 thread: the header
// reports 1 in force and no warning.
func TestRunHeaderThreads(t *testing.T) {
	opts := smallLinearRun(t, TaskEval, ModeCPU)
	opts.Epochs, opts.Warmup = 1, 0
	res := run(t, opts)
	if res.Header.Threads != 1 || res.Header.ThreadsWarning != "" {
		t.Errorf("header %d threads, warning %q; want 1 and none", res.Header.Threads, res.Header.ThreadsWarning)
	}
}

// TestHeaderTrainedParams: under LoRA the header names the parameters
// training changes (the adapters, fewer than the model's); without LoRA it
// has none apart, as training changes them all (the document then omits
// trained_params).
func TestHeaderTrainedParams(t *testing.T) {
	for _, name := range []string{"llm-llama", "llm-llama-lora"} {
		opts := smallWorkloads(t)[name]
		opts.Task, opts.Modes, opts.Threads = TaskTrain, []Mode{ModeCPU}, 1
		plan, err := PlanMemory(opts, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h := plan.Header
		lora := h.LoRA != ""
		if lora != (name == "llm-llama-lora") || lora && (h.TrainedParams <= 0 || h.TrainedParams >= h.Params) || !lora && h.TrainedParams != 0 {
			t.Errorf("%s: header LoRA %q, %d trained of %d parameters", name, h.LoRA, h.TrainedParams, h.Params)
		}
	}
}
