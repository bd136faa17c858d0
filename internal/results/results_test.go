package results

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestDecodeReadsWhatIsWritten encodes a run's and a sweep's documents as
// report writes them (Run, Sweep) and decodes each into a Doc, as plot and
// compare read them: the same fields come back, the run with no kind; and
// Decode refuses a document of an unwanted kind, of a newer version, or
// without one.
func TestDecodeReadsWhatIsWritten(t *testing.T) {
	free := int64(1 << 30)
	run := Run{Version: Version, Header: Header{Model: "linear", Task: "train", Env: &Env{Revision: "abc"}},
		Modes: []Mode{{Mode: "cuda", Device: "sim:1GiB", Status: Status{Kind: StatusOK}, Epochs: []Epoch{{Warmup: true, Seconds: 2}, {Seconds: 1.5}}}}}
	sweep := Sweep{Version: Version, Kind: SweepKind, Header: run.Header, Parameters: []string{"take"},
		Rows: []Row{{Settings: map[string]string{"take": "1GiB"}, DeviceFreeBytes: &free, Result: run}}}
	encode := func(v any) []byte {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	var doc Doc
	if err := Decode("run.json", encode(run), &doc, "", SweepKind); err != nil {
		t.Fatal(err)
	}
	if doc.Kind != "" || doc.Header.Env.Revision != "abc" || len(doc.Modes) != 1 || doc.Modes[0].Epochs[1].Seconds != 1.5 {
		t.Errorf("run decoded as %+v", doc)
	}
	doc = Doc{}
	if err := Decode("sweep.json", encode(sweep), &doc, "", SweepKind); err != nil {
		t.Fatal(err)
	}
	if doc.Kind != SweepKind || doc.Header.Model != "linear" || len(doc.Rows) != 1 || *doc.Rows[0].DeviceFreeBytes != free ||
		doc.Rows[0].Result.Modes[0].Device != "sim:1GiB" {
		t.Errorf("sweep decoded as %+v", doc)
	}
	for _, tt := range []struct {
		name string
		data string
		want string
	}{
		{"sweep where a run is wanted", string(encode(sweep)), `unknown kind "sweep" of gpuz JSON (want a run's)`},
		{"newer", `{"version": 99}`, "gpuz JSON version 99, this gpuz reads version 2"},
		{"no version", `{"modes": []}`, "no version"},
		{"not an object", `[1]`, "no JSON object"},
	} {
		if err := Decode(tt.name, []byte(tt.data), &Doc{}, ""); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Decode = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// TestCheckEpochSeconds: NaN, negative and times beyond MaxEpochSeconds
// are refused; 0 and MaxEpochSeconds are times.
func TestCheckEpochSeconds(t *testing.T) {
	for _, tt := range []struct {
		s  float64
		ok bool
	}{{0, true}, {MaxEpochSeconds, true}, {-1, false}, {MaxEpochSeconds * 2, false}} {
		if err := CheckEpochSeconds(tt.s); (err == nil) != tt.ok {
			t.Errorf("CheckEpochSeconds(%g) = %v", tt.s, err)
		}
	}
}

// TestRunCheckEpochs: the first epoch time CheckEpochSeconds refuses, a
// warm-up's included, is named by its mode (escaped, as it comes from a
// file) and its index; a run whose times are all times passes.
func TestRunCheckEpochs(t *testing.T) {
	mode := func(name string, seconds ...float64) Mode {
		m := Mode{Mode: name}
		for i, s := range seconds {
			m.Epochs = append(m.Epochs, Epoch{Index: i, Warmup: i == 0, Seconds: s})
		}
		return m
	}
	for _, tt := range []struct {
		name  string
		modes []Mode
		want  string // "" for none
	}{
		{"all times", []Mode{mode("cpu", 2, 1), mode("cuda", 0, MaxEpochSeconds)}, ""},
		{"no modes", nil, ""},
		{"warm-up negative", []Mode{mode("cpu", -1, 1)}, "mode cpu, epoch 0: epoch time -1 s is negative"},
		{"second mode", []Mode{mode("cpu", 2, 1), mode("cache", 2, 1, 1e308)}, "mode cache, epoch 2: epoch time 1e+308 s is beyond"},
		{"escaped mode", []Mode{mode("cu\x1bda", 2, -3)}, `mode cu\x1bda, epoch 1: epoch time -3 s is negative`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Run{Modes: tt.modes}.CheckEpochs()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckEpochs() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("CheckEpochs() = %v, want %q…", err, tt.want)
			}
		})
	}
}

// TestFloatJSON: a finite Float is written as encoding/json writes its
// float64, byte for byte, and reads back as itself; NaN and ±Inf are
// written as null, and null reads back as NaN.
func TestFloatJSON(t *testing.T) {
	for _, v := range []float64{0, 0.5, -1.234567e-7, 1e21, 1e-7, 123456789.125, math.NaN(), math.Inf(1), math.Inf(-1)} {
		got, err := json.Marshal(Float(v))
		if err != nil {
			t.Fatalf("%g: %v", v, err)
		}
		want := []byte("null")
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			want, _ = json.Marshal(v)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Float(%g) written as %s, want %s", v, got, want)
		}
		var back Float
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if finite := !math.IsNaN(v) && !math.IsInf(v, 0); finite && float64(back) != v || !finite && !math.IsNaN(float64(back)) {
			t.Errorf("Float(%g) read back as %g", v, float64(back))
		}
	}
}
