package hfconfig

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRaw writes a safetensors file of the header text h followed by a
// data section of dataLen zero bytes.
func writeRaw(t *testing.T, path, h string, dataLen int) {
	t.Helper()
	data := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	data = append(append(data, h...), make([]byte, dataLen)...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadHeaderAsSafetensors checks readHeader against what the
// safetensors library's read_metadata and Metadata::validate refuse
// (issue 44 items 4 and 24): each row one header, refused with a message
// naming the tensor and the field, or accepted as the library accepts it.
func TestReadHeaderAsSafetensors(t *testing.T) {
	tests := []struct {
		name    string
		header  string
		dataLen int
		err     string // in the error; "" for accepted
	}{
		{"two tensors end to end", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}`, 8, ""},
		{"listed out of order", `{"b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}, "a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}`, 8, ""},
		{"an empty tensor between", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}, "e": {"dtype": "F32", "shape": [0, 3], "data_offsets": [4, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}`, 8, ""},
		{"metadata of strings", `{"__metadata__": {"format": "pt"}, "a": {"dtype": "U8", "shape": [], "data_offsets": [0, 1]}}`, 1, ""},
		{"F4 in whole bytes", `{"a": {"dtype": "F4", "shape": [2, 3], "data_offsets": [0, 3]}}`, 3, ""},
		{"an unknown key kept aside", `{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "note": 1}}`, 1, ""},
		{"a dimension as a string", `{"a": {"dtype": "BF16", "shape": ["2"], "data_offsets": [0, 4]}}`, 4, `a: shape[0] is "2", not a non-negative integer`},
		{"a dimension with a fraction", `{"a": {"dtype": "BF16", "shape": [2.0], "data_offsets": [0, 4]}}`, 4, "a: shape[0] is 2.0, not a non-negative integer"},
		{"a dimension with an exponent", `{"a": {"dtype": "BF16", "shape": [2e0], "data_offsets": [0, 4]}}`, 4, "a: shape[0] is 2e0, not a non-negative integer"},
		{"a dimension minus zero", `{"a": {"dtype": "BF16", "shape": [-0], "data_offsets": [0, 0]}}`, 0, "a: shape[0] is -0, not a non-negative integer"},
		{"an offset as a string", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": ["0", 4]}}`, 4, `a: data_offsets[0] is "0", not a non-negative integer`},
		{"three offsets", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4, 8]}}`, 4, "a: data_offsets must be two integers, got 3"},
		{"a shape that is no array", `{"a": {"dtype": "BF16", "shape": 2, "data_offsets": [0, 4]}}`, 4, "a: shape is not an array"},
		{"no shape", `{"a": {"dtype": "BF16", "data_offsets": [0, 4]}}`, 4, "a: no shape"},
		{"a key in capitals", `{"a": {"dtype": "BF16", "Shape": [2], "data_offsets": [0, 4]}}`, 4, "a: no shape"},
		{"a key in two cases", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4], "SHAPE": [3]}}`, 4, "a: no shape (the key is spelled SHAPE)"},
		{"a key's case in a value kept", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4], "note": {"Shape": "x"}}}`, 4, ""},
		{"a null entry", `{"a": null}`, 0, "a: not an object of dtype, shape and data_offsets"},
		{"a dtype with an escape", `{"a": {"dtype": "BF\u0031\u0036", "shape": [2], "data_offsets": [0, 4]}}`, 4, ""},
		{"a string dimension holding a comma", `{"a": {"dtype": "BF16", "shape": ["2,3"], "data_offsets": [0, 12]}}`, 12, `a: shape[0] is "2,3", not a non-negative integer`},
		{"an empty shape", `{"a": {"dtype": "F32", "shape": [ ], "data_offsets": [0, 4]}}`, 4, ""},
		{"an unknown dtype", `{"a": {"dtype": "F12", "shape": [2], "data_offsets": [0, 4]}}`, 4, `a: unknown dtype "F12"`},
		{"a dtype that is no string", `{"a": {"dtype": 2, "shape": [2], "data_offsets": [0, 4]}}`, 4, "a: dtype is 2, not a string"},
		{"F4 in half a byte", `{"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}`, 2, "a: shape [3] of F4 is 12 bits, not whole bytes"},
		{"a span larger than its shape", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 6]}}`, 6, "a: data_offsets [0 6] hold 6 bytes, shape [2] of BF16 needs 4"},
		{"a span smaller than its shape", `{"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 4]}}`, 4, "a: data_offsets [0 4] hold 4 bytes, shape [2 2] of BF16 needs 8"},
		{"offsets reversed", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [4, 0]}}`, 4, "a: data_offsets [4 0] end before they start"},
		{"overlapping offsets", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}, "b": {"dtype": "BF16", "shape": [2], "data_offsets": [2, 6]}}`, 6, "b: data_offsets [2 6] overlap a's, which end at 4"},
		{"two tensors on the same bytes", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}`, 4, "b: data_offsets [0 4] overlap a's, which end at 4"},
		{"a gap", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}, "b": {"dtype": "BF16", "shape": [2], "data_offsets": [6, 10]}}`, 10, "b: data_offsets [6 10] leave bytes 4 to 6 to no tensor (a ends at 4)"},
		{"a first tensor not at 0", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [2, 6]}}`, 6, "a: data_offsets [2 6] leave the data section's first 2 bytes to no tensor"},
		{"bytes after the last tensor", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}`, 6, "the tensors' data ends at byte 4 of a data section of 6 bytes"},
		{"offsets beyond the data", `{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}`, 2, "a: data_offsets end at 4, outside the data section of 2 bytes"},
		{"metadata not of strings", `{"__metadata__": {"step": 1}, "a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}`, 1, "__metadata__ is not an object of strings"},
		{"a header not UTF-8", "{\"a\xff\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1, "the header is not UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "model.safetensors")
			writeRaw(t, path, tt.header, tt.dataLen)
			_, err := readHeader(path)
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("readHeader: %v; want it accepted", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), "model.safetensors: "+tt.err)):
				t.Errorf("readHeader: %v; want an error containing %q", err, "model.safetensors: "+tt.err)
			}
		})
	}
}

// TestSnapshotNamesEscaped checks that what a snapshot names reaches an
// error escaped and bounded (issue 44 item 2): a tensor name, a
// weight_map key and a shard name holding OSC, CSI and C1 sequences, a
// 1 MiB tensor name, a 100,002-dimension shape. Each error is one line of
// at most a few hundred bytes with no control character.
func TestSnapshotNamesEscaped(t *testing.T) {
	c := tinyLlama(t)
	want := c.Tensors()
	hostile := "x\x1b]0;pwned\a\x1b[2J\u009b31m\u202e"
	long := strings.Repeat("n", 1<<20)
	manyDims := "[" + strings.Repeat("1, ", 100_001) + "1]"
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		shown string // in the error
	}{
		{"an extra tensor's name", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, "model.safetensors"), append(append([]Tensor{}, want...), Tensor{hostile, []int{1}}))
		}, `x\x1b]0;pwned\a\x1b[2J\u009b31m\u202e is not a parameter`},
		{"a bad tensor's name", func(t *testing.T, dir string) {
			writeRaw(t, filepath.Join(dir, "model.safetensors"), `{`+jsonText(hostile)+`: {"dtype": "X"}}`, 0)
		}, `x\x1b]0;pwned\a\x1b[2J\u009b31m\u202e: no shape`},
		{"a megabyte tensor name", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, "model.safetensors"), append(append([]Tensor{}, want...), Tensor{long, []int{1}}))
		}, "nnnn… (1048576 bytes) is not a parameter"},
		{"a weight_map key", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, "model.safetensors"), want)
			writeIndex(t, dir, map[string]string{hostile: "../x"})
		}, `weight_map puts x\x1b]0;pwned\a\x1b[2J\u009b31m\u202e in "../x"`},
		{"a weight_map file", func(t *testing.T, dir string) {
			writeIndex(t, dir, map[string]string{"model.norm.weight": hostile + ".safetensors"})
		}, `x\x1b]0;pwned\a\x1b[2J\u009b31m\u202e.safetensors: no such file`},
		{"a megabyte weight_map file", func(t *testing.T, dir string) {
			writeIndex(t, dir, map[string]string{"model.norm.weight": long})
		}, "nnnn… (10486"},
		{"a shard's name", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, hostile+".safetensors"), without(want, "model.norm.weight"))
		}, `x\x1b]0;pwned\a\x1b[2J\u009b31m\u202e.safetensors: model.norm.weight is missing`},
		{"a 100,002-dimension shape", func(t *testing.T, dir string) {
			writeRaw(t, filepath.Join(dir, "model.safetensors"), `{"model.norm.weight": {"dtype": "BF16", "shape": `+manyDims+`, "data_offsets": [0, 4]}}`, 4)
		}, "shape [1 1 1 1 1 1 … 1 1] (100002 dimensions) of BF16 needs 2"},
		{"a megabyte dimension", func(t *testing.T, dir string) {
			writeRaw(t, filepath.Join(dir, "model.safetensors"), `{"a": {"dtype": "BF16", "shape": [`+strings.Repeat("9", 1<<20)+`], "data_offsets": [0, 4]}}`, 4)
		}, "shape[0] is 9999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			_, err := CheckSafetensors(dir, want)
			if err == nil {
				t.Fatal("CheckSafetensors accepted it")
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.shown) {
				t.Errorf("error %.300q; want it to contain %q", msg, tt.shown)
			}
			if i := strings.IndexFunc(msg, func(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f || r == '\u202e' }); i >= 0 {
				t.Errorf("error %.300q holds a control character at byte %d", msg, i)
			}
			if len(msg) > 1000+len(dir) {
				t.Errorf("error of %d bytes: %.300q…", len(msg), msg)
			}
		})
	}
}

// jsonText is s as a JSON string literal.
func jsonText(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return string(b)
}
