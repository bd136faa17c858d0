package torchplan

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/peertest"
)

// smallSynthetic are torch_reference.py's small sizes (SIZES[…]["small"],
// gpuz's --scale small).
var smallSynthetic = []Synthetic{
	{Workload: Linear, Batch: 4, Blocks: 3, Layers: 2, Dims: 128},
	{Workload: Resnet, Batch: 2, Levels: 3, Channels: 4, Mid: 8, Image: 32, Kernel: 3},
	{Workload: Attention, Batch: 4, Vocab: 64, DModel: 32, Heads: 4, Layers: 2, SeqLen: 32},
}

// TestSyntheticSavedMatchesTorch checks the rules on gpuz's three
// synthetic workloads as scripts/torch_reference.py writes them: for
// each at its small size, in float32 and under bf16 autocast, the bytes
// SyntheticSaved gives under torch-1.13 must equal, to the byte, what
// torch_reference.py saved measures with saved_tensors_hooks. It needs
// python3 with torch (GPUZ_TORCH_PYTHON, as .ci/run sets it).
func TestSyntheticSavedMatchesTorch(t *testing.T) {
	python := peertest.Python(t)
	var cases []Synthetic
	var stdin strings.Builder
	for _, s := range smallSynthetic {
		for _, autocast := range []bool{false, true} {
			s.Autocast = autocast
			cases = append(cases, s)
			stdin.WriteString(s.Workload + " --scale small --precision " + map[bool]string{false: "fp32", true: "bf16"}[autocast] + "\n")
		}
	}
	cmd := exec.Command(python, filepath.Join("..", "..", "scripts", "torch_reference.py"), "saved", "-")
	cmd.Stdin = strings.NewReader(stdin.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("torch_reference.py saved -: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<24)
	for i, c := range cases {
		if !sc.Scan() {
			t.Fatalf("torch_reference.py saved - printed %d lines for %d cases", i, len(cases))
		}
		var got struct {
			SavedBytes int64  `json:"saved_bytes"`
			Torch      string `json:"torch"`
		}
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v", c.Python(), err)
		}
		if !strings.HasPrefix(got.Torch, "1.13") {
			t.Fatalf("%s runs torch %s: the rules checked here are 1.13's", python, got.Torch)
		}
		saved, err := SyntheticSaved(c, Torch113)
		if err != nil {
			t.Fatalf("%s: %v", c.Python(), err)
		}
		if b := SavedBytes(saved); b != got.SavedBytes {
			t.Errorf("%s: torchplan says %d saved bytes, PyTorch %s keeps %d (%+d)", c.Python(), b, got.Torch, got.SavedBytes, got.SavedBytes-b)
		}
	}
}
