package hfconfig

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gpuz/internal/filekind"
	"gpuz/internal/termsafe"
)

// IndexFile is the name of a sharded snapshot's index: which file holds
// each tensor.
const IndexFile = "model.safetensors.index.json"

// maxHeader bounds a safetensors header (and an index file) as the
// safetensors library bounds a header (MAX_HEADER_SIZE): the files are
// untrusted, and real headers are a few hundred KiB.
const maxHeader = 100_000_000

// dtypeBits is the size in bits of each safetensors dtype, as the
// safetensors library's Dtype::bitsize gives it (F4 and the F6 kinds pack
// several elements into a byte).
var dtypeBits = map[string]int64{
	"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
	"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
	"I16": 16, "U16": 16, "F16": 16, "BF16": 16,
	"I32": 32, "U32": 32, "F32": 32,
	"I64": 64, "U64": 64, "F64": 64, "C64": 64,
}

// stEntry is one tensor of a safetensors header.
type stEntry struct {
	file    string // the file's base name, as it is on disk
	shape   []int
	offsets [2]int64 // its bytes [start, end) in the data section
}

// openRegular opens path for reading only if it is a regular file (after
// symbolic links: a Hugging Face cache's snapshots link to blobs), without
// blocking on a FIFO (filekind.Open); what is not a regular file is named
// by its whole path and its kind ("/dev/null is a device, not a regular
// file"). It returns the file and its size. Its errors show the path
// escaped and bounded (termsafe.Short): a shard's name comes from an
// index file.
func openRegular(path string) (*os.File, int64, error) {
	f, fi, err := filekind.Open(path)
	if nr, ok := filekind.IsNotRegular(err); ok {
		// The whole path: a device's base name ("null") says nothing.
		return nil, 0, &filekind.NotRegularError{Path: termsafe.Short(path), Mode: nr.Mode}
	}
	if err != nil {
		return nil, 0, escapePath(err)
	}
	return f, fi.Size(), nil
}

// escapePath returns err with the path of an *fs.PathError in it escaped
// and bounded (termsafe.Short), its cause kept for errors.Is; other errors
// as they are.
func escapePath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: termsafe.Short(pe.Path), Err: pe.Err}
	}
	return err
}

// readSmallFile reads a regular file of at most limit bytes.
func readSmallFile(path string, limit int64) ([]byte, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	base := termsafe.Short(filepath.Base(path))
	if size > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d read", base, size, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", base, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is more than %d bytes", base, limit)
	}
	return data, nil
}

// readHeader reads the header of the safetensors file at path: an 8-byte
// little-endian length N, then N bytes of UTF-8 JSON mapping each
// tensor's name to its dtype, shape and data offsets, with an optional
// __metadata__ of strings. It reads only the header, never the weights,
// and refuses what the safetensors library refuses (read_metadata and
// Metadata::validate): a header beyond the file or 100,000,000 bytes, a
// dtype it does not know, a shape or offset that is not a non-negative
// JSON integer (a string "4" included), a tensor whose bytes are not
// exactly its shape's, and tensors whose bytes, in the order of their
// offsets, do not lie end to end from the data section's start to its
// end (an overlap, a gap, bytes after the last). Its messages show names
// escaped and bounded (termsafe.Short).
func readHeader(path string) (map[string]stEntry, error) {
	file := filepath.Base(path)
	base := termsafe.Short(file)
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("%s: no header length: %v", base, err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeader || n > uint64(size-8) {
		return nil, fmt.Errorf("%s: header length %d is beyond the file (%d bytes) or the %d read", base, n, size, maxHeader)
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(f, header); err != nil {
		return nil, fmt.Errorf("%s: %v", base, err)
	}
	if !utf8.Valid(header) {
		return nil, fmt.Errorf("%s: the header is not UTF-8", base)
	}
	var raw object
	if err := json.Unmarshal(header, &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("%s: the header is not a JSON object", base)
	}
	if m, ok := raw["__metadata__"]; ok {
		var meta map[string]string
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("%s: __metadata__ is not an object of strings", base)
		}
	}
	dataLen := size - 8 - int64(n)
	entries := make(map[string]stEntry, len(raw))
	for name, v := range raw {
		if name == "__metadata__" {
			continue
		}
		e, err := parseEntry(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", base, termsafe.Short(name), err)
		}
		e.file = file
		entries[name] = e
	}
	if err := checkLayout(entries, dataLen); err != nil {
		return nil, fmt.Errorf("%s: %v", base, err)
	}
	return entries, nil
}

// parseEntry reads one tensor's {"dtype", "shape", "data_offsets"}, as
// the safetensors library's TensorInfo takes them (each key present, the
// numbers JSON integers), and checks that its offsets hold exactly its
// shape's bytes.
func parseEntry(v json.RawMessage) (stEntry, error) {
	// A struct, not a map per tensor: a header may hold 300,000 of them.
	var t struct {
		Dtype   json.RawMessage `json:"dtype"`
		Shape   json.RawMessage `json:"shape"`
		Offsets json.RawMessage `json:"data_offsets"`
	}
	if err := json.Unmarshal(v, &t); err != nil || bytes.Equal(v, []byte("null")) {
		return stEntry{}, fmt.Errorf("not an object of dtype, shape and data_offsets")
	}
	if k := foldedKey(v); k != "" {
		return stEntry{}, fmt.Errorf("no %s (the key is spelled %s)", strings.ToLower(k), termsafe.Short(k))
	}
	for _, f := range []struct {
		key string
		v   json.RawMessage
	}{{"dtype", t.Dtype}, {"shape", t.Shape}, {"data_offsets", t.Offsets}} {
		if f.v == nil || bytes.Equal(f.v, []byte("null")) {
			return stEntry{}, fmt.Errorf("no %s", f.key)
		}
	}
	dtype, err := jsonString(t.Dtype)
	if err != nil {
		return stEntry{}, fmt.Errorf("dtype is %s, not a string", termsafe.Short(string(t.Dtype)))
	}
	bits, ok := dtypeBits[dtype]
	if !ok {
		return stEntry{}, fmt.Errorf("unknown dtype \"%s\"", termsafe.Short(dtype))
	}
	dims, err := naturals(t.Shape, "shape")
	if err != nil {
		return stEntry{}, err
	}
	e := stEntry{shape: make([]int, len(dims))}
	for i, d := range dims {
		if int64(int(d)) != d {
			return stEntry{}, fmt.Errorf("shape's dimension %d (%d) is beyond an int", i, d)
		}
		e.shape[i] = int(d)
		if bits, err = mul(bits, d, "the tensor's size"); err != nil {
			return stEntry{}, err
		}
	}
	if bits%8 != 0 {
		return stEntry{}, fmt.Errorf("shape %s of %s is %d bits, not whole bytes", shapeText(e.shape), dtype, bits)
	}
	offs, err := naturals(t.Offsets, "data_offsets")
	if err != nil {
		return stEntry{}, err
	}
	if len(offs) != 2 {
		return stEntry{}, fmt.Errorf("data_offsets must be two integers, got %d", len(offs))
	}
	e.offsets = [2]int64{offs[0], offs[1]}
	if offs[0] > offs[1] {
		return stEntry{}, fmt.Errorf("data_offsets %v end before they start", e.offsets)
	}
	if held := offs[1] - offs[0]; held != bits/8 {
		return stEntry{}, fmt.Errorf("data_offsets %v hold %d bytes, shape %s of %s needs %d", e.offsets, held, shapeText(e.shape), dtype, bits/8)
	}
	return e, nil
}

// tensorKeys are the keys of a safetensors tensor's entry.
var tensorKeys = []string{"dtype", "shape", "data_offsets"}

// foldedKey returns a key of the JSON object v (valid JSON) that equals
// one of tensorKeys only without regard to case ("Shape"), which
// encoding/json would take for it and the safetensors library (serde)
// does not; "" when there is none.
func foldedKey(v []byte) string {
	depth := 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			j := i + 1
			for ; j < len(v) && v[j] != '"'; j++ {
				if v[j] == '\\' {
					j++
				}
			}
			raw := v[i+1 : min(j, len(v))]
			rest := bytes.TrimLeft(v[min(j+1, len(v)):], " \t\r\n")
			if depth == 1 && len(rest) > 0 && rest[0] == ':' {
				for _, k := range tensorKeys {
					if string(raw) != k && bytes.EqualFold(raw, []byte(k)) {
						return string(raw)
					}
				}
			}
			i = j
		}
	}
	return ""
}

// jsonString reads v, valid JSON, as a string: without a second parse
// when it has no escape (a dtype never has).
func jsonString(v json.RawMessage) (string, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), nil
	}
	var s string
	err := json.Unmarshal(v, &s)
	return s, err
}

// naturals reads v, the value of key, as a JSON array of non-negative
// integers (a number with a fraction, an exponent or a sign, or one
// given as a string, is refused, as serde refuses it for a usize). v is
// valid JSON (the header parsed): the usual array of numbers is split at
// its commas without a second JSON parse, which a header of 300,000
// tensors would pay twice per tensor; anything else is parsed to name the
// element that is wrong.
func naturals(v json.RawMessage, key string) ([]int64, error) {
	v = bytes.TrimSpace(v)
	if len(v) < 2 || v[0] != '[' {
		return nil, fmt.Errorf("%s is not an array", key)
	}
	body := bytes.TrimSpace(v[1 : len(v)-1])
	if len(body) == 0 {
		return []int64{}, nil
	}
	out := make([]int64, 0, bytes.Count(body, []byte{','})+1)
	for f := range bytes.SplitSeq(body, []byte{','}) {
		f = bytes.TrimSpace(f)
		x, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil || x < 0 || f[0] == '-' {
			return nil, notNatural(v, key)
		}
		out = append(out, x)
	}
	return out, nil
}

// notNatural is naturals' error for an array v of key that holds
// something other than a non-negative integer: it names the first such
// element.
func notNatural(v json.RawMessage, key string) error {
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return fmt.Errorf("%s is not an array", key)
	}
	for i, it := range items {
		if x, err := strconv.ParseInt(string(it), 10, 64); err != nil || x < 0 || it[0] == '-' {
			return fmt.Errorf("%s[%d] is %s, not a non-negative integer", key, i, termsafe.Short(string(it)))
		}
	}
	return fmt.Errorf("%s is not an array of non-negative integers", key)
}

// checkLayout checks the tensors of one file as the safetensors library's
// Metadata::validate and read_metadata do: taken in the order of their
// offsets, each starts where the one before ends, the first at 0, and the
// last ends at the data section's end (dataLen bytes): no two overlap, and
// no byte of the data section is outside every tensor.
func checkLayout(entries map[string]stEntry, dataLen int64) error {
	type placed struct {
		name string
		off  [2]int64
	}
	byOffset := make([]placed, 0, len(entries))
	for name, e := range entries {
		byOffset = append(byOffset, placed{name, e.offsets})
	}
	slices.SortFunc(byOffset, func(a, b placed) int {
		if c := cmp.Compare(a.off[0], b.off[0]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.off[1], b.off[1]); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var end int64
	prev := ""
	for _, t := range byOffset {
		name, off := t.name, t.off
		switch {
		case off[0] < end:
			return fmt.Errorf("%s: data_offsets %v overlap %s's, which end at %d", termsafe.Short(name), off, termsafe.Short(prev), end)
		case off[0] > end && prev == "":
			return fmt.Errorf("%s: data_offsets %v leave the data section's first %d bytes to no tensor", termsafe.Short(name), off, off[0])
		case off[0] > end:
			return fmt.Errorf("%s: data_offsets %v leave bytes %d to %d to no tensor (%s ends at %d)", termsafe.Short(name), off, end, off[0], termsafe.Short(prev), end)
		}
		end, prev = off[1], name
	}
	if end != dataLen {
		if end > dataLen {
			return fmt.Errorf("%s: data_offsets end at %d, outside the data section of %d bytes", termsafe.Short(prev), end, dataLen)
		}
		return fmt.Errorf("the tensors' data ends at byte %d of a data section of %d bytes", end, dataLen)
	}
	return nil
}

// maxFiles is the most shard names filesText shows.
const maxFiles = 3

// filesText names files for a message, escaped and bounded: the first
// maxFiles of them and how many more there are ("a, b, c and 7 more").
func filesText(files []string) string {
	shown := make([]string, min(len(files), maxFiles))
	for i := range shown {
		shown[i] = termsafe.Short(files[i])
	}
	text := strings.Join(shown, ", ")
	if more := len(files) - len(shown); more > 0 {
		text += fmt.Sprintf(" and %d more", more)
	}
	return text
}

// maxDims is the most dimensions shapeText shows.
const maxDims = 8

// shapeText formats a shape for a message as fmt's %v does ("[4 8]"), a
// shape of more than maxDims dimensions shortened to its first and last
// ones and its rank ("[1 1 1 1 … 1 1] (100002 dimensions)"): a header may
// give any number.
func shapeText(shape []int) string {
	if len(shape) <= maxDims {
		return fmt.Sprint(shape)
	}
	head := strings.Trim(fmt.Sprint(shape[:maxDims-2]), "[]")
	tail := strings.Trim(fmt.Sprint(shape[len(shape)-2:]), "[]")
	return fmt.Sprintf("[%s … %s] (%d dimensions)", head, tail, len(shape))
}

// shardsOf returns the safetensors files of dir: those its index names
// (and, for each tensor, the file the index puts it in) when there is an
// index, else every *.safetensors, sorted.
func shardsOf(dir string) (files []string, placed map[string]string, err error) {
	data, err := readSmallFile(filepath.Join(dir, IndexFile), maxHeader)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		files, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
		if err != nil {
			return nil, nil, err
		}
		if len(files) == 0 {
			return nil, nil, fmt.Errorf("%s: no *.safetensors files and no %s", termsafe.Short(dir), IndexFile)
		}
		for i, f := range files {
			files[i] = filepath.Base(f)
		}
		slices.Sort(files)
		return files, nil, nil
	case err != nil:
		return nil, nil, err
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &index); err != nil {
		return nil, nil, fmt.Errorf("%s: malformed JSON: %v", IndexFile, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, nil, fmt.Errorf("%s: no weight_map", IndexFile)
	}
	seen := map[string]bool{}
	for name, file := range index.WeightMap {
		if file == "" || file == "." || file == ".." || strings.ContainsAny(file, `/\`) || filepath.Base(file) != file {
			return nil, nil, fmt.Errorf("%s: weight_map puts %s in \"%s\", not a file name inside the directory", IndexFile, termsafe.Short(name), termsafe.Short(file))
		}
		if !seen[file] {
			seen[file] = true
			files = append(files, file)
		}
	}
	slices.Sort(files)
	return files, index.WeightMap, nil
}

// CheckSafetensors checks the safetensors headers of the snapshot
// directory dir against want (a Config's Tensors()): every tensor wanted
// is there with its shape, and nothing else is, save non-parameter buffers
// (*.attn.bias, *.attn.masked_bias, *rotary_emb.inv_freq), GPT-2 names
// with a "transformer." prefix, and an lm_head.weight stored although the
// embeddings are tied, if its shape is the embedding's. It reads the
// shards model.safetensors.index.json names, or else every *.safetensors;
// it reads only the headers and refuses anything but regular files. The
// error names the first tensor of want that is missing or shaped
// otherwise, or else the first extra tensor by name. It returns how many
// tensors of want it checked.
func CheckSafetensors(dir string, want []Tensor) (checked int, err error) {
	files, placed, err := shardsOf(dir)
	if err != nil {
		return 0, err
	}
	found := map[string]stEntry{}
	for _, file := range files {
		entries, err := readHeader(filepath.Join(dir, file))
		if err != nil {
			return 0, err
		}
		for name, e := range entries {
			name = strings.TrimPrefix(name, "transformer.")
			if prev, dup := found[name]; dup {
				return 0, fmt.Errorf("%s: %s is also in %s", termsafe.Short(file), termsafe.Short(name), termsafe.Short(prev.file))
			}
			found[name] = e
		}
	}
	for name, file := range placed {
		if e, ok := found[strings.TrimPrefix(name, "transformer.")]; ok && e.file != file {
			return 0, fmt.Errorf("%s: weight_map puts %s in %s, but it is in %s", IndexFile, termsafe.Short(name), termsafe.Short(file), termsafe.Short(e.file))
		}
	}
	where := filesText(files)
	wanted := make(map[string]bool, len(want))
	var embed []int
	for _, t := range want {
		wanted[t.Name] = true
		if t.Name == "model.embed_tokens.weight" || t.Name == "wte.weight" {
			embed = t.Shape
		}
		e, ok := found[t.Name]
		if !ok {
			return 0, fmt.Errorf("%s: %s is missing", where, t.Name)
		}
		if !slices.Equal(e.shape, t.Shape) {
			return 0, fmt.Errorf("%s: %s has shape %s, the config builds %v", termsafe.Short(e.file), t.Name, shapeText(e.shape), t.Shape)
		}
		checked++
	}
	var extra []string
	for name := range found {
		if !wanted[name] {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		e := found[name]
		switch {
		case strings.HasSuffix(name, ".attn.bias"), strings.HasSuffix(name, ".attn.masked_bias"),
			strings.HasSuffix(name, "rotary_emb.inv_freq"):
			continue // buffers, not parameters
		case name == "lm_head.weight" && embed != nil:
			if !slices.Equal(e.shape, embed) {
				return 0, fmt.Errorf("%s: lm_head.weight has shape %s, the tied embedding is %v", termsafe.Short(e.file), shapeText(e.shape), embed)
			}
			continue
		}
		return 0, fmt.Errorf("%s: %s is not a parameter the config builds", termsafe.Short(e.file), termsafe.Short(name))
	}
	return checked, nil
}
