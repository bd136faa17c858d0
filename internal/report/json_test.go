package report

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/results"
)

func TestWriteJSON(t *testing.T) {
	golden(t, "json_interrupted.golden", written(t, func(w io.Writer) error { return WriteJSON(w, withEnv(interruptedResult)) }))
}

// TestWriteJSONEdges checks what has no place in the golden file: modes
// without epochs, values that JSON cannot hold, and copies that do not
// apply (null) beside copies of zero bytes (0).
func TestWriteJSONEdges(t *testing.T) {
	r := bench.Result{Modes: []bench.ModeResult{
		{Mode: bench.ModeCPU, Epochs: []bench.Epoch{
			{Index: 0, Value: results.Float(math.NaN())}, {Index: 1, Value: results.Float(math.Inf(1))}, {Index: 2, Value: 0.5},
		}, Status: bench.Status{Kind: bench.StatusOK}},
		{Mode: bench.ModeCUDA, Status: bench.Status{Kind: bench.StatusUnavailable, Reason: "no GPU"}},
		{Mode: bench.ModeCache, Epochs: withCopies([]bench.Epoch{{Index: 0, Value: 1}}, 0, 0, 0), Status: bench.Status{Kind: bench.StatusOK}},
	}}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Modes []struct {
			Epochs []struct {
				Value         *float64 `json:"value"`
				UploadBytes   *int64   `json:"upload_bytes"`
				DownloadBytes *int64   `json:"download_bytes"`
				CopySeconds   *float64 `json:"copy_seconds"`
			} `json:"epochs"`
			Stats struct {
				N int `json:"n"`
			} `json:"stats"`
		} `json:"modes"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v in\n%s", err, b.Bytes())
	}
	cpu, cuda := doc.Modes[0], doc.Modes[1]
	if cpu.Epochs[0].Value != nil || cpu.Epochs[1].Value != nil || cpu.Epochs[2].Value == nil || *cpu.Epochs[2].Value != 0.5 {
		t.Errorf("want values null, null, 0.5 in\n%s", b.Bytes())
	}
	for _, e := range cpu.Epochs {
		if e.UploadBytes != nil || e.DownloadBytes != nil || e.CopySeconds != nil {
			t.Errorf("want null copies for the cpu mode, which has none, in\n%s", b.Bytes())
		}
	}
	if e := doc.Modes[2].Epochs[0]; e.UploadBytes == nil || e.DownloadBytes == nil || e.CopySeconds == nil {
		t.Errorf("want the cache mode's copies, 0 as they are, in\n%s", b.Bytes())
	}
	if cpu.Stats.N != 3 {
		t.Errorf("cpu stats n = %d, want 3", cpu.Stats.N)
	}
	if cuda.Epochs == nil || len(cuda.Epochs) != 0 || cuda.Stats.N != 0 {
		t.Errorf("want an empty epochs list and n 0 for a mode that did not run in\n%s", b.Bytes())
	}
}
