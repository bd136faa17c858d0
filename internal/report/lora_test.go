package report

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"gpuz/internal/bench"
)

// TestHeaderSaysLoRA writes a LoRA run's header: the text names the
// setting and the trained parameters (in evaluation, the adapters'
// parameters, nothing being trained), the JSON header carries lora,
// lora_rank and trained_params, and the benchmark names a lora part;
// without LoRA none of them appears.
func TestHeaderSaysLoRA(t *testing.T) {
	for _, tc := range []struct {
		task                  bench.Task
		lora                  string
		rank                  int
		line, name            string
		jsonLoRA, jsonTrained any
	}{
		{task: bench.TaskTrain},
		{task: bench.TaskTrain, lora: "R=16 α=16 q_proj,v_proj", rank: 16,
			line: "lora: R=16 α=16 q_proj,v_proj: 1.70M parameters trained (the adapters), the model's own frozen\n",
			name: "/lora=16/", jsonLoRA: "R=16 α=16 q_proj,v_proj", jsonTrained: float64(1_703_936)},
		{task: bench.TaskEval, lora: "R=16 α=16 q_proj,v_proj", rank: 16,
			line: "lora: R=16 α=16 q_proj,v_proj: 1.70M adapter parameters beside the model's own\n",
			name: "/lora=16/", jsonLoRA: "R=16 α=16 q_proj,v_proj", jsonTrained: float64(1_703_936)},
	} {
		h := bench.Header{Model: "llm llama-3.2-1b", Task: string(tc.task), Scale: "custom", Params: 1_237_518_336, ParamBytes: 4 * 1_237_518_336,
			Batch: 1, Samples: 8, LoRA: tc.lora, LoRARank: tc.rank}
		if tc.lora != "" {
			h.TrainedParams = 1_703_936
		}
		text := written(t, func(w io.Writer) error { return WriteHeader(w, h) })
		if tc.line == "" && strings.Contains(text, "lora:") || tc.line != "" && !strings.Contains(text, tc.line) {
			t.Errorf("%s %q: header\n%s\nwant the line %q", tc.task, tc.lora, text, tc.line)
		}
		var doc struct {
			Header map[string]any `json:"header"`
		}
		if err := json.Unmarshal([]byte(written(t, func(w io.Writer) error { return WriteJSON(w, bench.Result{Header: h}) })), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Header["lora"] != tc.jsonLoRA || doc.Header["trained_params"] != tc.jsonTrained {
			t.Errorf("%s %q: JSON header lora %v, trained_params %v; want %v, %v", tc.task, tc.lora, doc.Header["lora"], doc.Header["trained_params"], tc.jsonLoRA, tc.jsonTrained)
		}
		name := benchName(h, bench.ModeCUDA, "sim:8GiB", nil)
		if tc.name == "" && strings.Contains(name, "lora=") || tc.name != "" && !strings.Contains(name, tc.name) {
			t.Errorf("%s %q: benchmark name %s, want it to hold %q", tc.task, tc.lora, name, tc.name)
		}
	}
}
