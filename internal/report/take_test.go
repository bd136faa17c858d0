package report

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"gpuz/internal/bench"
)

// TestHeaderSaysWhatWasHeld writes the header of a run with --take's
// memory held on its GPU: the text says how much and where, and the JSON
// header carries take_bytes; without a take neither says anything (a
// single --take used to appear only in the JSON's command line).
func TestHeaderSaysWhatWasHeld(t *testing.T) {
	h := bench.Header{
		Model: "linear", Task: string(bench.TaskTrain), Scale: "demo",
		DataBytes: 4096, Params: 99_072, ParamBytes: 396_288,
		Batch: 4, Samples: 8, BLAS: "OpenBLAS 0.3.21", Threads: 2, GPU: "sim:256MiB",
	}
	for _, tt := range []struct {
		take     int64
		line     string
		jsonTake any
	}{
		{0, "", nil},
		{128 << 20, "held: 128 MiB on sim:256MiB by --take\n", float64(128 << 20)},
	} {
		h.TakeBytes = tt.take
		text := written(t, func(w io.Writer) error { return WriteHeader(w, h) })
		if tt.line == "" && strings.Contains(text, "held:") || tt.line != "" && !strings.HasSuffix(text, "devices: cuda and cache on sim:256MiB, cpu on host\n"+tt.line) {
			t.Errorf("take %d: header\n%s\nwant it to end with the devices line and %q", tt.take, text, tt.line)
		}
		var doc struct {
			Header map[string]any `json:"header"`
		}
		out := written(t, func(w io.Writer) error { return WriteJSON(w, bench.Result{Header: h}) })
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		if got := doc.Header["take_bytes"]; got != tt.jsonTake {
			t.Errorf("take %d: JSON header take_bytes = %v, want %v", tt.take, got, tt.jsonTake)
		}
	}
}
