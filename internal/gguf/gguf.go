// Package gguf writes GGUF files, the format llama.cpp (and Ollama, and
// LM Studio) load models from: a header, metadata as typed key-value
// pairs, a table of tensors (name, dimensions, type, offset) and their
// data, each aligned (docs/gguf.md in github.com/ggml-org/ggml). Tensors
// are written in float32 or float16, or quantized by package quant into
// ggml's block types Q8_0, Q4_0, Q4_K and Q6_K, byte for byte as llama.cpp's
// quantizer writes them.
//
// It writes and does not read: package hfconfig reads a GGUF file as a
// model, with github.com/gpustack/gguf-parser-go (which the tests read
// its files back with too). It is written here, with encoding/binary,
// because the Go readers read only, and the format's writer, llama.cpp's
// gguf-py, is Python. An Encoder writes one file as it is fed,
// one tensor at a time, so that a model is never held twice; Llama maps
// gpuz's parameters of a Llama-family model to llama.cpp's tensors and
// metadata.
package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

	"gpuz/internal/half"
	"gpuz/internal/quant"
)

// magic is "GGUF" read as a little-endian uint32.
const magic = 0x46554747

// version is the format version written: 3 (64-bit counts and sizes).
const version = 3

// Alignment is the alignment of the tensor data and of each tensor in
// it, in bytes: GGUF's default, written as general.alignment too.
const Alignment = 32

// Type is a tensor's element type, as ggml numbers it.
type Type uint32

// The element types written: the floats, and ggml's block types (a
// matrix's rows each a whole number of blocks, quantized as package quant
// does, ggml's reference quantizers' bytes).
const (
	F32  Type = 0  // IEEE binary32
	F16  Type = 1  // IEEE binary16, rounded to nearest even
	Q4_0 Type = 2  // 32 weights a block: an fp16 scale and 16 bytes of nibbles (18 bytes)
	Q8_0 Type = 8  // 32 weights a block: an fp16 scale and 32 int8 (34 bytes)
	Q4_K Type = 12 // 256 weights a super-block of 144 bytes
	Q6_K Type = 14 // 256 weights a super-block of 210 bytes
)

// String names t as ggml does.
func (t Type) String() string {
	switch t {
	case F32:
		return "F32"
	case F16:
		return "F16"
	case Q4_0:
		return "Q4_0"
	case Q8_0:
		return "Q8_0"
	case Q4_K:
		return "Q4_K"
	case Q6_K:
		return "Q6_K"
	}
	return fmt.Sprintf("Type(%d)", uint32(t))
}

// Quantized reports whether t is one of ggml's block types written
// (Q8_0, Q4_0, Q4_K, Q6_K).
func (t Type) Quantized() bool { return t == Q4_0 || t == Q8_0 || t == Q4_K || t == Q6_K }

// kind returns t's storage kind in package quant; ok is false for a type
// this package does not write.
func (t Type) kind() (k quant.Kind, ok bool) {
	if t != F32 && t != F16 && !t.Quantized() {
		return 0, false
	}
	return quant.FromGGML(uint32(t))
}

// TypeOf returns the GGUF type of quant's kind k; ok is false for a kind
// this package does not write (bf16, and NF4, which GGUF has no type
// for).
func TypeOf(k quant.Kind) (t Type, ok bool) {
	g, ok := k.GGML()
	if !ok {
		return 0, false
	}
	if _, ok := Type(g).kind(); !ok {
		return 0, false
	}
	return Type(g), true
}

// valueType is a metadata value's type as GGUF numbers it.
type valueType uint32

// The metadata value types written.
const (
	typeUint32  valueType = 4
	typeInt32   valueType = 5
	typeFloat32 valueType = 6
	typeBool    valueType = 7
	typeString  valueType = 8
	typeArray   valueType = 9
)

// KV is one metadata key and its value: a uint32, int32, float32, bool,
// string, or a []string, []float32 or []int32 (an array of those).
type KV struct {
	Key   string
	Value any
}

// Tensor is one tensor of a file: its name, its dimensions as ggml counts
// them (the fastest-varying first, so that a row-major [rows, cols]
// matrix is {cols, rows}) and its element type. A tensor of a block type
// is quantized along its rows of Dims[0] elements.
type Tensor struct {
	Name string
	Dims []uint64
	Type Type
}

// elems is t's number of elements.
func (t Tensor) elems() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= int64(d)
	}
	return n
}

// shape returns t as a matrix of rows of Dims[0] elements.
func (t Tensor) shape() (rows, cols int) {
	cols = int(t.Dims[0])
	return int(t.elems() / int64(cols)), cols
}

// bytes is t's data in bytes, before its padding: rows·RowBytes for a
// block type. t's type must be one written and its shape one it holds
// (NewEncoder checks both).
func (t Tensor) bytes() int64 {
	k, _ := t.Type.kind()
	return k.Bytes(t.shape())
}

// padded rounds n up to a multiple of Alignment.
func padded(n int64) int64 { return (n + Alignment - 1) / Alignment * Alignment }

// Encoder writes one GGUF file: NewEncoder writes everything before the
// tensors' data, Write each tensor's data, Close checks that every tensor
// was written. Tensors may be written in any order; one written before
// its turn (the order of the table) is held until the tensors before it
// are written.
type Encoder struct {
	w       *bufio.Writer
	tensors []Tensor
	index   map[string]int
	// next is the index of the next tensor to write; pending holds the
	// data of tensors written ahead of it, by index.
	next    int
	pending map[int][]float32
	buf     []byte
}

// NewEncoder writes the header, the metadata (general.alignment first,
// then meta in order) and the tensor table of a file of the given tensors
// to w, and returns the Encoder that writes their data. It refuses a
// tensor without a name or dimensions, a name given twice, a type it does
// not write, rows that are not a whole number of its type's blocks, and a
// value of a type KV does not list.
func NewEncoder(w io.Writer, meta []KV, tensors []Tensor) (*Encoder, error) {
	e := &Encoder{w: bufio.NewWriterSize(w, 1<<20), tensors: tensors, index: map[string]int{}, pending: map[int][]float32{}}
	for i, t := range tensors {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("gguf: tensor %d has no name", i)
		case len(t.Dims) == 0 || len(t.Dims) > 4:
			return nil, fmt.Errorf("gguf: tensor %s has %d dimensions, want 1 to 4", t.Name, len(t.Dims))
		case slices.Contains(t.Dims, 0):
			return nil, fmt.Errorf("gguf: tensor %s of dimensions %v has no elements", t.Name, t.Dims)
		}
		k, ok := t.Type.kind()
		if !ok {
			return nil, fmt.Errorf("gguf: tensor %s: type %v is not written", t.Name, t.Type)
		}
		if err := k.CheckShape(t.shape()); err != nil {
			return nil, fmt.Errorf("gguf: tensor %s: %w", t.Name, err)
		}
		if _, dup := e.index[t.Name]; dup {
			return nil, fmt.Errorf("gguf: tensor %s given twice", t.Name)
		}
		e.index[t.Name] = i
	}
	meta = append([]KV{{"general.alignment", uint32(Alignment)}}, meta...)
	var h writer
	h.u32(magic)
	h.u32(version)
	h.u64(uint64(len(tensors)))
	h.u64(uint64(len(meta)))
	for _, kv := range meta {
		h.str(kv.Key)
		if err := h.value(kv.Value); err != nil {
			return nil, fmt.Errorf("gguf: metadata %s: %w", kv.Key, err)
		}
	}
	var offset int64
	for _, t := range tensors {
		h.str(t.Name)
		h.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			h.u64(d)
		}
		h.u32(uint32(t.Type))
		h.u64(uint64(offset))
		offset += padded(t.bytes())
	}
	h.b = append(h.b, make([]byte, padded(int64(len(h.b)))-int64(len(h.b)))...)
	if _, err := e.w.Write(h.b); err != nil {
		return nil, err
	}
	return e, nil
}

// Write writes the data of the tensor name, values in ggml's order (row
// after row of a row-major matrix), converted to its type: a block type
// quantized row by row with quant.Quantize, which refuses a NaN or an
// infinity.
func (e *Encoder) Write(name string, values []float32) error {
	i, ok := e.index[name]
	switch {
	case !ok:
		return fmt.Errorf("gguf: no tensor %s in the file's table", name)
	case i < e.next || e.pending[i] != nil:
		return fmt.Errorf("gguf: tensor %s written twice", name)
	case int64(len(values)) != e.tensors[i].elems():
		return fmt.Errorf("gguf: tensor %s of dimensions %v given %d values, want %d", name, e.tensors[i].Dims, len(values), e.tensors[i].elems())
	case i > e.next:
		e.pending[i] = append([]float32(nil), values...)
		return nil
	}
	if err := e.data(e.tensors[i], values); err != nil {
		return err
	}
	for e.next++; e.pending[e.next] != nil; e.next++ {
		v := e.pending[e.next]
		delete(e.pending, e.next)
		if err := e.data(e.tensors[e.next], v); err != nil {
			return err
		}
	}
	return nil
}

// data writes t's values and its padding.
func (e *Encoder) data(t Tensor, values []float32) error {
	const chunk = 1 << 16
	if t.Type.Quantized() {
		return e.quantized(t, values, chunk)
	}
	for len(values) > 0 {
		v := values[:min(chunk, len(values))]
		values = values[len(v):]
		b := e.buf[:0]
		if t.Type == F16 {
			for _, x := range v {
				b = binary.LittleEndian.AppendUint16(b, half.FP16FromFloat32(x))
			}
		} else {
			for _, x := range v {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
			}
		}
		e.buf = b
		if _, err := e.w.Write(b); err != nil {
			return err
		}
	}
	return e.pad(t)
}

// quantized writes the values of t, of a block type, a whole number of
// rows of about chunk values at a time, and its padding.
func (e *Encoder) quantized(t Tensor, values []float32, chunk int) error {
	k, _ := t.Type.kind()
	_, cols := t.shape()
	step := max(1, chunk/cols)
	for len(values) > 0 {
		rows := min(step, len(values)/cols)
		v := values[:rows*cols]
		values = values[len(v):]
		b := slices.Grow(e.buf[:0], int(k.Bytes(rows, cols)))[:k.Bytes(rows, cols)]
		if err := quant.Quantize(k, b, v, rows, cols); err != nil {
			return fmt.Errorf("gguf: tensor %s: %w", t.Name, err)
		}
		e.buf = b
		if _, err := e.w.Write(b); err != nil {
			return err
		}
	}
	return e.pad(t)
}

// pad writes the zeros that end t's data at the next multiple of
// Alignment.
func (e *Encoder) pad(t Tensor) error {
	_, err := e.w.Write(make([]byte, padded(t.bytes())-t.bytes()))
	return err
}

// Close checks that every tensor's data was written and flushes the
// file; it does not close the underlying writer.
func (e *Encoder) Close() error {
	if e.next < len(e.tensors) {
		return fmt.Errorf("gguf: tensor %s was not written", e.tensors[e.next].Name)
	}
	return e.w.Flush()
}

// writer appends GGUF's little-endian encodings to b.
type writer struct{ b []byte }

func (w *writer) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }

// str appends a string: its length as a uint64, then its bytes.
func (w *writer) str(s string) {
	w.u64(uint64(len(s)))
	w.b = append(w.b, s...)
}

// value appends a metadata value: its type, then the value.
func (w *writer) value(v any) error {
	switch v := v.(type) {
	case uint32:
		w.u32(uint32(typeUint32))
		w.u32(v)
	case int32:
		w.u32(uint32(typeInt32))
		w.u32(uint32(v))
	case float32:
		w.u32(uint32(typeFloat32))
		w.u32(math.Float32bits(v))
	case bool:
		w.u32(uint32(typeBool))
		if v {
			w.b = append(w.b, 1)
		} else {
			w.b = append(w.b, 0)
		}
	case string:
		w.u32(uint32(typeString))
		w.str(v)
	case []string:
		w.array(typeString, len(v))
		for _, s := range v {
			w.str(s)
		}
	case []float32:
		w.array(typeFloat32, len(v))
		for _, x := range v {
			w.u32(math.Float32bits(x))
		}
	case []int32:
		w.array(typeInt32, len(v))
		for _, x := range v {
			w.u32(uint32(x))
		}
	default:
		return fmt.Errorf("a value of type %T, which this writer does not write", v)
	}
	return nil
}

// array appends an array's header: its type, its elements' type and
// their number.
func (w *writer) array(elem valueType, n int) {
	w.u32(uint32(typeArray))
	w.u32(uint32(elem))
	w.u64(uint64(n))
}
