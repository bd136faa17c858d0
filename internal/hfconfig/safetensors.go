package hfconfig

import (
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

	"gpuz/internal/filekind"
)

// IndexFile is the name of a sharded snapshot's index: which file holds
// each tensor.
const IndexFile = "model.safetensors.index.json"

// maxHeader bounds a safetensors header (and an index file): the files are
// untrusted, and real headers are a few hundred KiB.
const maxHeader = 100 << 20

// dtypeSize is the size in bytes of each safetensors dtype.
var dtypeSize = map[string]int64{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// stEntry is one tensor of a safetensors header.
type stEntry struct {
	file  string // the file's base name, for messages
	shape []int
}

// openRegular opens path for reading only if it is a regular file (after
// symbolic links: a Hugging Face cache's snapshots link to blobs), without
// blocking on a FIFO (filekind.Open); what is not a regular file is named
// by its whole path and its kind ("/dev/null is a device, not a regular
// file"). It returns the file and its size.
func openRegular(path string) (*os.File, int64, error) {
	f, fi, err := filekind.Open(path)
	if nr, ok := filekind.IsNotRegular(err); ok {
		// The whole path: a device's base name ("null") says nothing.
		return nil, 0, &filekind.NotRegularError{Path: path, Mode: nr.Mode}
	}
	if err != nil {
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// readSmallFile reads a regular file of at most limit bytes.
func readSmallFile(path string, limit int64) ([]byte, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d read", filepath.Base(path), size, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is more than %d bytes", filepath.Base(path), limit)
	}
	return data, nil
}

// readHeader reads the header of the safetensors file at path: an 8-byte
// little-endian length N, then N bytes of JSON mapping each tensor's name
// to its dtype, shape and data offsets, with an optional __metadata__. It
// reads only the header, never the weights, and checks each tensor's
// shape and its bytes' place in the data section.
func readHeader(path string) (map[string]stEntry, error) {
	base := filepath.Base(path)
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
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("%s: the header is not a JSON object", base)
	}
	dataLen := size - 8 - int64(n)
	entries := make(map[string]stEntry, len(raw))
	for name, v := range raw {
		if name == "__metadata__" {
			continue
		}
		e, err := parseEntry(v, dataLen)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", base, name, err)
		}
		e.file = base
		entries[name] = e
	}
	return entries, nil
}

// parseEntry reads one tensor's {"dtype", "shape", "data_offsets"} and
// checks it against a data section of dataLen bytes.
func parseEntry(v json.RawMessage, dataLen int64) (stEntry, error) {
	var t struct {
		Dtype   string            `json:"dtype"`
		Shape   []json.Number     `json:"shape"`
		Offsets []json.RawMessage `json:"data_offsets"`
	}
	if err := json.Unmarshal(v, &t); err != nil {
		return stEntry{}, fmt.Errorf("malformed entry: %v", err)
	}
	size, ok := dtypeSize[t.Dtype]
	if !ok {
		return stEntry{}, fmt.Errorf("unknown dtype %q", t.Dtype)
	}
	if t.Shape == nil {
		return stEntry{}, fmt.Errorf("no shape")
	}
	e := stEntry{shape: make([]int, len(t.Shape))}
	bytes := size
	for i, d := range t.Shape {
		x, err := strconv.ParseInt(d.String(), 10, 64)
		if err != nil || x < 0 || int64(int(x)) != x {
			return stEntry{}, fmt.Errorf("shape %v is not non-negative integers", t.Shape)
		}
		e.shape[i] = int(x)
		if bytes, err = mul(bytes, x, "the tensor's size"); err != nil {
			return stEntry{}, err
		}
	}
	if len(t.Offsets) != 2 {
		return stEntry{}, fmt.Errorf("data_offsets must be two integers")
	}
	var off [2]int64
	for i, o := range t.Offsets {
		x, err := strconv.ParseInt(string(o), 10, 64)
		if err != nil || x < 0 {
			return stEntry{}, fmt.Errorf("data_offsets must be two non-negative integers, got %s", o)
		}
		off[i] = x
	}
	if off[0] > off[1] || off[1] > dataLen {
		return stEntry{}, fmt.Errorf("data_offsets %v are outside the data section of %d bytes", off, dataLen)
	}
	if off[1]-off[0] != bytes {
		return stEntry{}, fmt.Errorf("data_offsets %v hold %d bytes, shape %v of %s needs %d", off, off[1]-off[0], e.shape, t.Dtype, bytes)
	}
	return e, nil
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
			return nil, nil, fmt.Errorf("%s: no *.safetensors files and no %s", dir, IndexFile)
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
			return nil, nil, fmt.Errorf("%s: weight_map puts %s in %q, not a file name inside the directory", IndexFile, name, file)
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
				return 0, fmt.Errorf("%s: %s is also in %s", file, name, prev.file)
			}
			found[name] = e
		}
	}
	for name, file := range placed {
		if e, ok := found[strings.TrimPrefix(name, "transformer.")]; ok && e.file != file {
			return 0, fmt.Errorf("%s: weight_map puts %s in %s, but it is in %s", IndexFile, name, file, e.file)
		}
	}
	where := strings.Join(files, ", ")
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
			return 0, fmt.Errorf("%s: %s has shape %v, the config builds %v", e.file, t.Name, e.shape, t.Shape)
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
				return 0, fmt.Errorf("%s: lm_head.weight has shape %v, the tied embedding is %v", e.file, e.shape, embed)
			}
			continue
		}
		return 0, fmt.Errorf("%s: %s is not a parameter the config builds", e.file, name)
	}
	return checked, nil
}
