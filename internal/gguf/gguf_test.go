package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	parser "github.com/gpustack/gguf-parser-go"
)

// TestEncoderOrder writes three tensors of odd sizes out of the table's
// order and reads them back: each is where the table says, aligned, the
// one written early held until its turn.
func TestEncoderOrder(t *testing.T) {
	tensors := []Tensor{
		{Name: "a", Dims: []uint64{3}, Type: F32},
		{Name: "b", Dims: []uint64{5, 1}, Type: F16},
		{Name: "c", Dims: []uint64{2}, Type: F32},
	}
	values := map[string][]float32{"a": {1, 2, 3}, "b": {-1, 0.5, 0.25, 2, 4}, "c": {7, 8}}
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, []KV{{"general.name", "t"}, {"x.list", []int32{4, 5}}}, tensors)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"c", "a", "b"} {
		if err := e.Write(name, values[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	gf, err := parser.ParseGGUFFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if kv, ok := gf.Header.MetadataKV.Get("x.list"); !ok || !slices.Equal(kv.ValueArray().ValuesInt32(), []int32{4, 5}) {
		t.Errorf("x.list: %v", kv)
	}
	for _, name := range []string{"a", "b", "c"} {
		if got := readTensor(t, path, gf, name); !slices.Equal(got, values[name]) {
			t.Errorf("tensor %s: %v, want %v", name, got, values[name])
		}
	}
	b, _ := gf.TensorInfos.Get("b")
	if b.Offset != Alignment || math.Float32frombits(binary.LittleEndian.Uint32(buf.Bytes()[gf.TensorDataStartOffset:])) != 1 {
		t.Errorf("b at offset %d, want %d (a's 12 bytes padded)", b.Offset, Alignment)
	}
}

// TestEncoderRefuses checks the encoder's errors: a bad table, a bad
// value, a tensor written twice, of the wrong size or unknown, and a file
// closed before every tensor is written.
func TestEncoderRefuses(t *testing.T) {
	one := []Tensor{{Name: "a", Dims: []uint64{2}, Type: F32}}
	for _, tc := range []struct {
		name    string
		meta    []KV
		tensors []Tensor
		write   func(e *Encoder) error
		want    string
	}{
		{"no name", nil, []Tensor{{Dims: []uint64{1}}}, nil, "has no name"},
		{"no dims", nil, []Tensor{{Name: "a"}}, nil, "0 dimensions"},
		{"twice in the table", nil, []Tensor{one[0], one[0]}, nil, "given twice"},
		{"type", nil, []Tensor{{Name: "a", Dims: []uint64{1}, Type: 30}}, nil, "type Type(30) is not written"},
		{"no elements", nil, []Tensor{{Name: "a", Dims: []uint64{4, 0}}}, nil, "has no elements"},
		{"blocks", nil, []Tensor{{Name: "a", Dims: []uint64{48, 2}, Type: Q8_0}}, nil, "tensor a: a q8_0 weight's rows must be a multiple of 32 weights; these have 48"},
		{"not finite", nil, []Tensor{{Name: "a", Dims: []uint64{32}, Type: Q4_0}}, func(e *Encoder) error {
			v := make([]float32, 32)
			v[5] = float32(math.NaN())
			return e.Write("a", v)
		}, "tensor a: quant: quantizing a 1×32 weight to q4_0: element (0, 5) is NaN"},
		{"value", []KV{{"k", 1.5}}, one, nil, "float64"},
		{"unknown", nil, one, func(e *Encoder) error { return e.Write("b", []float32{1, 2}) }, "no tensor b"},
		{"size", nil, one, func(e *Encoder) error { return e.Write("a", []float32{1}) }, "given 1 values, want 2"},
		{"twice", nil, one, func(e *Encoder) error {
			e.Write("a", []float32{1, 2})
			return e.Write("a", []float32{1, 2})
		}, "written twice"},
		{"missing", nil, one, func(e *Encoder) error { return e.Close() }, "tensor a was not written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEncoder(&bytes.Buffer{}, tc.meta, tc.tensors)
			if err == nil && tc.write != nil {
				err = tc.write(e)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
