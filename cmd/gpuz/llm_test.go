package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"gpuz/internal/hfconfig"
)

// TestLLMPlanReportsPublishedParams runs the built binary's
// "gpuz plan llm train cuda --model M --format json" at full depth (a plan:
// nothing is allocated) for every preset and for config files of four
// models that are not presets, and checks the plan's parameter count
// against the model's published total (tied weights counted once).
func TestLLMPlanReportsPublishedParams(t *testing.T) {
	cases := map[string]int64{
		// Not presets: internal/hfconfig/testdata, with their published
		// totals.
		"../../internal/hfconfig/testdata/gpt2-medium.json":     354_823_168,
		"../../internal/hfconfig/testdata/smollm2-360m.json":    361_821_120,
		"../../internal/hfconfig/testdata/qwen2.5-1.5b.json":    1_543_714_304,
		"../../internal/hfconfig/testdata/mistral-7b-v0.1.json": 7_241_732_096,
	}
	for _, p := range hfconfig.Presets() {
		cases[p.Name] = p.Params
	}
	for model, want := range cases {
		t.Run(filepath.Base(model), func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command(gpuzBinary, "plan", "llm", "train", "cuda", "--model", model, "--seq-len", "128",
				"--batch", "1", "--samples", "1", "--device", "sim:8GiB", "--format", "json").Output()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			var plan struct {
				Header struct {
					Params int64 `json:"params"`
				} `json:"header"`
			}
			if err := json.Unmarshal(out, &plan); err != nil {
				t.Fatal(err)
			}
			if plan.Header.Params != want {
				t.Errorf("the plan counts %d parameters, the published total is %d", plan.Header.Params, want)
			}
		})
	}
}

// TestModelName checks how a run names its model: a preset by its name, a
// snapshot by its directory, config.json by its directory, another config
// file by its name.
func TestModelName(t *testing.T) {
	for _, tc := range []struct {
		model hfconfig.Model
		want  string
	}{
		{hfconfig.Model{Name: "smollm2-135m"}, "smollm2-135m"},
		{hfconfig.Model{Name: "models/Llama-3.2-1B/", Dir: "models/Llama-3.2-1B/"}, "Llama-3.2-1B"},
		{hfconfig.Model{Name: "models/Qwen2.5-1.5B/config.json"}, "Qwen2.5-1.5B"},
		{hfconfig.Model{Name: "testdata/mistral-7b-v0.1.json"}, "mistral-7b-v0.1"},
		{hfconfig.Model{Name: "mine.json"}, "mine"},
	} {
		if got := modelName(tc.model); got != tc.want {
			t.Errorf("modelName(%+v) = %q, want %q", tc.model, got, tc.want)
		}
	}
}

// TestLoRAPlanOnTheLaptop is issue 35's case: Llama-3.2-1B fine-tuned in
// bf16 at a sequence of 1024 on an 8 GiB laptop GPU. With --lora 16 the
// cuda mode's need is under the card's capacity where full fine-tuning's
// is not, and the window policy's copies per epoch (3 of 18 blocks) are
// about half of full fine-tuning's: each miss writes the window back, and
// a LoRA block's write-back is its adapters and live activations, not its
// frozen weights (the loads are the same).
func TestLoRAPlanOnTheLaptop(t *testing.T) {
	type plan struct {
		Modes []struct {
			Mode           string `json:"mode"`
			Policy         string `json:"policy"`
			DeviceBytes    int64  `json:"device_bytes"`
			DeviceTotal    int64  `json:"device_total"`
			CopiesPerEpoch *struct {
				Up   int64 `json:"upload_bytes"`
				Down int64 `json:"download_bytes"`
			} `json:"copies_per_epoch"`
		} `json:"modes"`
	}
	run := func(lora string) (cudaFits bool, windowCopies int64) {
		out, err := exec.Command(gpuzBinary, "plan", "llm", "train", "cuda,cache", "--model", "llama-3.2-1b", "--lora", lora,
			"--precision", "bf16", "--seq-len", "1024", "--batch", "1", "--device", "sim:rtx4060-laptop", "--format", "json").Output()
		if err != nil {
			t.Fatalf("--lora %s: %v: %s", lora, err, out)
		}
		var p plan
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Modes {
			switch {
			case m.Mode == "cuda":
				cudaFits = m.DeviceBytes <= m.DeviceTotal
			case m.Mode == "cache" && m.Policy == "window":
				windowCopies = m.CopiesPerEpoch.Up + m.CopiesPerEpoch.Down
			}
		}
		return cudaFits, windowCopies
	}
	loraFits, loraCopies := run("16")
	fullFits, fullCopies := run("0")
	if !loraFits || fullFits {
		t.Errorf("cuda fits the card: %v with LoRA, %v without; want only with", loraFits, fullFits)
	}
	if r := float64(loraCopies) / float64(fullCopies); r < 0.4 || r > 0.6 {
		t.Errorf("window copies per epoch %d with LoRA, %d without: %.2f of them, want about half", loraCopies, fullCopies, r)
	}
}
