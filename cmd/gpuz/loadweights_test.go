package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestLoadWeights exports SmolLM2-135M's first two layers drawn from seed
// 7 as an F32 GGUF file, then generates from the file with
// --load-weights and another seed: the tokens are the preset's at seed 7,
// in float32 and with the projections quantized to Q8_0 (the file's
// floats quantized as the preset's drawn ones are), and without
// --load-weights (weights drawn from the other seed) they are not.
func TestLoadWeights(t *testing.T) {
	file := filepath.Join(t.TempDir(), "smollm2.gguf")
	if out, err := exec.Command(gpuzBinary, "llm", "export", "--model", "smollm2-135m", "--layers", "2", "--type", "f32", "--seed", "7", "--gguf", file).CombinedOutput(); err != nil {
		t.Fatalf("export: %v: %s", err, out)
	}
	generate := func(args ...string) []int {
		t.Helper()
		path := filepath.Join(t.TempDir(), "run.json")
		args = append([]string{"llm", "generate", "cpu", "--prompt-ids", "1,2,3,4,5,6,7,8", "--tokens", "8", "--epochs", "2", "--json", path}, args...)
		if out, err := exec.Command(gpuzBinary, args...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
		var doc struct {
			Modes []struct {
				Generated [][]int `json:"generated"`
			} `json:"modes"`
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &doc); err != nil || len(doc.Modes) != 1 || len(doc.Modes[0].Generated) != 1 {
			t.Fatalf("%v: %v in %s", args, err, b)
		}
		return doc.Modes[0].Generated[0]
	}
	for _, weights := range [][]string{nil, {"--weights", "q8_0"}} {
		preset := generate(append([]string{"--model", "smollm2-135m", "--layers", "2", "--seed", "7"}, weights...)...)
		loaded := generate(append([]string{"--model", file, "--load-weights", "--seed", "99"}, weights...)...)
		drawn := generate(append([]string{"--model", file, "--seed", "99"}, weights...)...)
		if !slices.Equal(loaded, preset) {
			t.Errorf("%v: the file's weights generate %v, the preset's at seed 7 %v", weights, loaded, preset)
		}
		if slices.Equal(drawn, preset) {
			t.Errorf("%v: weights drawn from seed 99 generate the seed 7 tokens %v too: the check cannot tell", weights, drawn)
		}
	}
}
