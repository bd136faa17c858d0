package hfconfig

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	ggufparser "github.com/gpustack/gguf-parser-go"
	"golang.org/x/exp/mmap"

	"gpuz/internal/quant"
	"gpuz/internal/termsafe"
)

// GGUF is the tensor table of a GGUF file read as a model (LoadGGUF):
// where each tensor's bytes are, of which kind, so that they can be read
// one tensor at a time (Open).
type GGUF struct {
	Path string
	// Architecture is general.architecture: "llama" or "qwen2".
	Architecture string
	// Size is the file's bytes when it was read.
	Size int64
	// Tensors are the file's tensors, in the order of its table.
	Tensors []GGUFTensor
}

// GGUFTensor is one tensor of a GGUF file.
type GGUFTensor struct {
	// Name is llama.cpp's ("blk.0.attn_q.weight"); Param transformers'
	// ("model.layers.0.self_attn.q_proj.weight"), "" for
	// rope_freqs.weight, which is no parameter.
	Name, Param string
	Kind        quant.Kind
	// Dims are the dimensions as ggml counts them, the fastest-varying
	// first: a row-major [rows, cols] matrix is {cols, rows}, and a
	// quantized matrix's blocks run along Dims[0].
	Dims []int64
	// Offset is the first byte of the tensor's data in the file (from
	// the file's start), Bytes their number.
	Offset, Bytes int64
	// RopePermuted says the rows are in llama.cpp's rotary order (the
	// llama architecture's queries and keys): the file's row
	// RopeFileRow(r, HeadDim) is transformers' row r.
	RopePermuted bool
}

// implementedGGML names the ggml types gpuz implements, for messages.
const implementedGGML = "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K"

// ggufArchs maps the GGUF architectures read to the model_type they are
// read as, and whether their queries' and keys' rows are permuted.
// llama.cpp's llama architecture (Mistral's files included) pairs
// adjacent rotary dimensions, so its converter permutes; qwen2 rotates
// halves as transformers does (LLAMA_ROPE_TYPE_NEOX), so it does not.
var ggufArchs = map[string]struct {
	modelType string
	permuted  bool
}{
	"llama": {"llama", true},
	"qwen2": {"qwen2", false},
}

// supportedGGUFArchs lists ggufArchs' names, sorted.
func supportedGGUFArchs() string {
	var names []string
	for n := range ggufArchs {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// LoadGGUF reads the GGUF file at path as a model: its header and tensor
// table (with github.com/gpustack/gguf-parser-go; never the tensors'
// data but rope_freqs.weight's few values), the architecture's metadata
// as a Config, validated as a config.json's is, every tensor's ggml type
// as its storage kind, and the tensors' names and dimensions checked
// against the Config's Tensors(), each tensor's bytes inside the file.
// Errors are one line naming the file.
func LoadGGUF(path string) (Model, error) {
	m, err := loadGGUF(path)
	if err != nil {
		return Model{}, fmt.Errorf("%s: %w", termsafe.Short(path), err)
	}
	return m, nil
}

func loadGGUF(path string) (Model, error) {
	if ggufparser.CompleteShardGGUFFilename(path) != nil {
		return Model{}, errors.New("a split GGUF file (-NNNNN-of-NNNNN.gguf): gpuz reads one-file models only (llama-gguf-split --merge joins them)")
	}
	f, size, err := openRegular(path)
	if err != nil {
		return Model{}, err
	}
	f.Close()
	gf, err := parseGGUF(path)
	if err != nil {
		return Model{}, err
	}
	meta, err := metadataOf(gf)
	if err != nil {
		return Model{}, err
	}
	archName, err := meta.string("general.architecture")
	if err != nil {
		return Model{}, err
	}
	arch, ok := ggufArchs[archName]
	if !ok {
		return Model{}, fmt.Errorf("general.architecture %s is not supported (supported: %s)", quoted(archName), supportedGGUFArchs())
	}
	g := &GGUF{Path: path, Architecture: archName, Size: size}
	if err := g.readTable(gf, meta); err != nil {
		return Model{}, err
	}
	c, err := g.config(meta, arch.modelType)
	if err != nil {
		return Model{}, err
	}
	kinds, err := g.match(c, arch.permuted)
	if err != nil {
		return Model{}, err
	}
	if c.RopeScaling, err = g.ropeScaling(c); err != nil {
		return Model{}, err
	}
	return Model{Config: c, Name: path, Checked: len(kinds), Kinds: kinds, GGUF: g}, nil
}

// parseGGUF reads the header and tensor table with gguf-parser-go
// v0.28.1, which reads the file front to back through a buffered os.File
// and never its tensors' data. It bounds the tensor and metadata counts,
// each string's length and each array's by the bytes left in the file,
// and a tensor's dimensions at 4, so that an absurd count or length is an
// error before anything is allocated; it checks that the tensors' bytes
// together fit in the file. Two things it does not guard, guarded here:
// it panics (it cannot return an error there) on a tensor whose byte size
// overflows uint64, a type its table lacks (the removed Q4_2), and a
// general.alignment that is not a uint32 or is 0; the recover turns those
// into the file's error. And it allocates an array's items before
// reading them, up to 16 bytes an item for as many items as the file has
// bytes left: SkipLargeMetadata skips (seeks over) every array but four
// per-layer keys gpuz refuses anyway, so that the vocabulary's hundreds
// of thousands of strings are not read either. A name like
// x-00001-of-00002.gguf would make it open the other shards:
// loadGGUF refuses those first.
func parseGGUF(path string) (gf *ggufparser.GGUFFile, err error) {
	defer func() {
		if p := recover(); p != nil {
			gf, err = nil, fmt.Errorf("malformed GGUF file: %s", termsafe.Short(fmt.Sprint(p)))
		}
	}()
	gf, err = ggufparser.ParseGGUFFile(path, ggufparser.SkipLargeMetadata())
	switch {
	case errors.Is(err, ggufparser.ErrGGUFFileInvalidFormat):
		return nil, errors.New(`not a GGUF file: it does not begin with "GGUF"`)
	case err != nil:
		return nil, fmt.Errorf("malformed GGUF file: %s", termsafe.Short(err.Error()))
	}
	return gf, nil
}

// ggufMeta is a file's metadata by key.
type ggufMeta map[string]ggufparser.GGUFMetadataKV

// metadataOf indexes gf's metadata, refusing a key given twice (as
// llama.cpp's gguf_init does).
func metadataOf(gf *ggufparser.GGUFFile) (ggufMeta, error) {
	meta := make(ggufMeta, len(gf.Header.MetadataKV))
	for _, kv := range gf.Header.MetadataKV {
		if _, dup := meta[kv.Key]; dup {
			return nil, fmt.Errorf("metadata key %s is given twice", quoted(kv.Key))
		}
		meta[kv.Key] = kv
	}
	return meta, nil
}

// string reads key as a string; it must be there.
func (m ggufMeta) string(key string) (string, error) {
	kv, ok := m[key]
	if !ok {
		return "", fmt.Errorf("%s is missing", key)
	}
	if kv.ValueType != ggufparser.GGUFMetadataValueTypeString {
		return "", fmt.Errorf("%s must be a string, got a %s", key, typeName(kv.ValueType))
	}
	return kv.ValueString(), nil
}

// typeName names a metadata value's type for a message: "string".
func typeName(t ggufparser.GGUFMetadataValueType) string { return strings.ToLower(t.String()) }

// isInteger reports whether t is one of GGUF's integer types.
func isInteger(t ggufparser.GGUFMetadataValueType) bool {
	return t.IsNumeric() && t != ggufparser.GGUFMetadataValueTypeFloat32 && t != ggufparser.GGUFMetadataValueTypeFloat64
}

// size reads key as a positive integer of at most 2³¹−1: def when it is
// absent and def > 0, an error when it is absent and def is 0.
func (m ggufMeta) size(key string, def int) (int, error) {
	kv, ok := m[key]
	switch {
	case !ok && def > 0:
		return def, nil
	case !ok:
		return 0, fmt.Errorf("%s is missing", key)
	case kv.ValueType == ggufparser.GGUFMetadataValueTypeArray:
		return 0, fmt.Errorf("%s is an array (a size per layer), which gpuz does not build", key)
	case !isInteger(kv.ValueType):
		return 0, fmt.Errorf("%s must be an integer, got a %s", key, typeName(kv.ValueType))
	}
	switch v := ggufparser.ValueNumeric[float64](kv); {
	case v > math.MaxInt32:
		return 0, fmt.Errorf("%s %.0f is beyond %d", key, v, math.MaxInt32)
	case v < 1:
		return 0, fmt.Errorf("%s must be positive, got %.0f", key, v)
	}
	return int(ggufparser.ValueNumeric[int64](kv)), nil
}

// float reads key as a finite number: def when absent.
func (m ggufMeta) float(key string, def float64) (float64, error) {
	kv, ok := m[key]
	if !ok {
		return def, nil
	}
	if !kv.ValueType.IsNumeric() {
		return 0, fmt.Errorf("%s must be a number, got a %s", key, typeName(kv.ValueType))
	}
	v := ggufparser.ValueNumeric[float64](kv)
	if kv.ValueType == ggufparser.GGUFMetadataValueTypeFloat32 {
		// The shortest decimal that is this float32, as a float64: the
		// value the converter rounded (1e-5 for 1e-5's float32), not
		// the float32's own binary value (9.99999974e-06).
		v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', -1, 32), 64)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s must be a finite number, got %g", key, v)
	}
	return v, nil
}

// maxElems bounds a tensor's elements, so that its bytes (at most 4 an
// element) fit int64 with room to add offsets.
const maxElems = 1 << 60

// readTable reads gf's tensor table into g: each tensor's kind, its
// dimensions, and its bytes, which must lie inside the file on the
// file's alignment. It refuses a name given twice and a type gpuz does
// not implement.
func (g *GGUF) readTable(gf *ggufparser.GGUFFile, meta ggufMeta) error {
	align := int64(32) // GGUF's default; the parser refuses another type or 0
	if kv, ok := meta["general.alignment"]; ok {
		align = int64(kv.ValueUint32())
	}
	seen := make(map[string]bool, len(gf.TensorInfos))
	for _, ti := range gf.TensorInfos {
		name := termsafe.Short(ti.Name)
		if seen[ti.Name] {
			return fmt.Errorf("tensor %s is in the table twice", name)
		}
		seen[ti.Name] = true
		kind, ok := quant.FromGGML(uint32(ti.Type))
		if !ok {
			return fmt.Errorf("%s is %v, which gpuz does not implement (it implements %s)", name, ti.Type, implementedGGML)
		}
		t := GGUFTensor{Name: ti.Name, Kind: kind}
		elems := uint64(1)
		for _, d := range ti.Dimensions {
			hi, lo := bits.Mul64(elems, d)
			if d == 0 || hi != 0 || lo > maxElems {
				return fmt.Errorf("%s has dimensions %v: no elements, or too many", name, ti.Dimensions)
			}
			elems = lo
			t.Dims = append(t.Dims, int64(d))
		}
		cols := t.Dims[0]
		if cols > math.MaxInt32 {
			return fmt.Errorf("%s has rows of %d elements, beyond %d", name, cols, math.MaxInt32)
		}
		rows := int64(elems) / cols
		if err := kind.CheckShape(int(rows), int(cols)); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		t.Bytes = rows * kind.RowBytes(int(cols)) // at most 4·2⁶⁰: no overflow
		start := gf.TensorDataStartOffset
		if ti.Offset%uint64(align) != 0 {
			return fmt.Errorf("%s: its data's offset %d is not a multiple of the alignment, %d", name, ti.Offset, align)
		}
		if ti.Offset > uint64(g.Size) || start+int64(ti.Offset) > g.Size-t.Bytes {
			return fmt.Errorf("%s: its %d bytes at offset %d of the data (which begins at byte %d) go beyond the file's %d bytes", name, t.Bytes, ti.Offset, start, g.Size)
		}
		t.Offset = start + int64(ti.Offset)
		g.Tensors = append(g.Tensors, t)
	}
	return nil
}

// tensor returns the tensor named name.
func (g *GGUF) tensor(name string) (GGUFTensor, bool) {
	for _, t := range g.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return GGUFTensor{}, false
}

// config reads the architecture's metadata (llama.cpp's
// llama_model_loader keys, prefixed by the architecture's name) as a
// Config of model_type modelType. The vocabulary is <arch>.vocab_size, or
// else tokenizer.ggml.tokens' length, or else the token embedding's rows;
// the embeddings are tied when there is no output.weight; the
// projections have biases when the file has them.
func (g *GGUF) config(meta ggufMeta, modelType string) (Config, error) {
	t, _ := modelTypeNamed(modelType)
	p := g.Architecture + "."
	c := Config{ModelType: modelType, Arch: t.arch, Act: t.arch.Act}
	var err error
	sizes := []struct {
		dst *int
		key string
		def int
	}{
		{&c.MaxPositions, "context_length", 0},
		{&c.Hidden, "embedding_length", 0},
		{&c.Intermediate, "feed_forward_length", 0},
		{&c.Layers, "block_count", 0},
		{&c.Heads, "attention.head_count", 0},
	}
	for _, s := range sizes {
		if *s.dst, err = meta.size(p+s.key, s.def); err != nil {
			return Config{}, err
		}
	}
	if c.KVHeads, err = meta.size(p+"attention.head_count_kv", c.Heads); err != nil {
		return Config{}, err
	}
	if c.Hidden%c.Heads != 0 {
		if _, ok := meta[p+"attention.key_length"]; !ok {
			return Config{}, fmt.Errorf("%sattention.head_count %d does not divide %sembedding_length %d (and %sattention.key_length is absent)", p, c.Heads, p, c.Hidden, p)
		}
	}
	if c.HeadDim, err = meta.size(p+"attention.key_length", max(c.Hidden/c.Heads, 1)); err != nil {
		return Config{}, err
	}
	for _, key := range []string{"attention.value_length", "rope.dimension_count"} {
		n, err := meta.size(p+key, c.HeadDim)
		if err != nil {
			return Config{}, err
		}
		if n != c.HeadDim {
			return Config{}, fmt.Errorf("%s%s %d differs from the head width %d, which gpuz does not build", p, key, n, c.HeadDim)
		}
	}
	if c.Heads%c.KVHeads != 0 {
		return Config{}, fmt.Errorf("%sattention.head_count_kv %d does not divide %sattention.head_count %d", p, c.KVHeads, p, c.Heads)
	}
	if c.NormEps, err = meta.float(p+"attention.layer_norm_rms_epsilon", 0); err != nil {
		return Config{}, err
	}
	if !(c.NormEps > 0) {
		return Config{}, fmt.Errorf("%sattention.layer_norm_rms_epsilon must be positive, got %g", p, c.NormEps)
	}
	if c.RopeTheta, err = meta.float(p+"rope.freq_base", 10000); err != nil {
		return Config{}, err
	}
	if s, err := meta.string(p + "rope.scaling.type"); err == nil && s != "none" {
		return Config{}, fmt.Errorf("%srope.scaling.type %s is not supported (gpuz implements llama3's scaling, which GGUF stores as rope_freqs.weight)", p, quoted(s))
	}
	if c.Vocab, err = g.vocab(meta); err != nil {
		return Config{}, err
	}
	_, hasHead := g.tensor("output.weight")
	c.TieEmbeddings = !hasHead
	_, c.QKVBias = g.tensor("blk.0.attn_q.bias")
	_, c.OutBias = g.tensor("blk.0.attn_output.bias")
	if t.qkvBias.always {
		c.QKVBias = true
	}
	if t.outBias == (biasRule{}) {
		c.OutBias = false // the tensor, if any, is refused as one the model lacks
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// vocab returns the vocabulary's size: <arch>.vocab_size, or else
// tokenizer.ggml.tokens' length, or else token_embd.weight's rows.
func (g *GGUF) vocab(meta ggufMeta) (int, error) {
	key := g.Architecture + ".vocab_size"
	if _, ok := meta[key]; ok {
		return meta.size(key, 0)
	}
	if kv, ok := meta["tokenizer.ggml.tokens"]; ok {
		if kv.ValueType != ggufparser.GGUFMetadataValueTypeArray {
			return 0, fmt.Errorf("tokenizer.ggml.tokens must be an array, got a %s", typeName(kv.ValueType))
		}
		n := kv.ValueArray().Len
		if n < 1 || n > MaxVocab {
			return 0, fmt.Errorf("tokenizer.ggml.tokens has %d tokens: want 1 to 2^24", n)
		}
		return int(n), nil
	}
	if t, ok := g.tensor("token_embd.weight"); ok && len(t.Dims) == 2 && t.Dims[1] <= MaxVocab {
		return int(t.Dims[1]), nil
	}
	return 0, fmt.Errorf("the vocabulary's size is nowhere: no %s, no tokenizer.ggml.tokens, no token_embd.weight of 2 dimensions", key)
}

// match checks g's tensors against c.Tensors() as CheckSafetensors checks
// a snapshot's: every parameter there (by its GGUF name) with
// transformers' shape in ggml's order, and nothing else but
// rope_freqs.weight. It names each tensor's parameter, marks the
// permuted ones, and returns the parameters' kinds by transformers' name.
func (g *GGUF) match(c Config, permuted bool) (map[string]quant.Kind, error) {
	index := make(map[string]int, len(g.Tensors))
	for i, t := range g.Tensors {
		index[t.Name] = i
	}
	kinds := map[string]quant.Kind{}
	for _, w := range c.Tensors() {
		name, ok := c.Arch.GGUFName(w.Name)
		if !ok {
			return nil, fmt.Errorf("%s has no GGUF name", w.Name)
		}
		i, ok := index[name]
		if !ok {
			return nil, fmt.Errorf("%s (%s) is missing", name, w.Name)
		}
		t := &g.Tensors[i]
		want := make([]int64, len(w.Shape))
		for j, d := range w.Shape {
			want[len(want)-1-j] = int64(d)
		}
		if !slices.Equal(t.Dims, want) {
			return nil, fmt.Errorf("%s has dimensions %v, the metadata's model has %v (%s)", termsafe.Short(name), t.Dims, want, w.Name)
		}
		t.Param = w.Name
		t.RopePermuted = permuted && c.Arch.ropePermuted(w.Name)
		kinds[w.Name] = t.Kind
		delete(index, name)
	}
	delete(index, "rope_freqs.weight")
	if len(index) > 0 {
		var extra []string
		for name := range index {
			extra = append(extra, name)
		}
		slices.Sort(extra)
		return nil, fmt.Errorf("%s is not a tensor of the model the metadata describes", termsafe.Short(extra[0]))
	}
	return kinds, nil
}

// ropeScaling reads rope_freqs.weight, each rotary frequency's divisor,
// which is all a GGUF file keeps of llama3 scaling (its parameters are
// not in the metadata), as a RopeFreqs scaling: nil when the file has no
// such tensor or every divisor is 1.
func (g *GGUF) ropeScaling(c Config) (*RopeScaling, error) {
	t, ok := g.tensor("rope_freqs.weight")
	if !ok {
		return nil, nil
	}
	if t.Kind != quant.F32 || !slices.Equal(t.Dims, []int64{int64(c.HeadDim / 2)}) {
		return nil, fmt.Errorf("rope_freqs.weight is %v of dimensions %v, want f32 of [%d]", t.Kind, t.Dims, c.HeadDim/2)
	}
	data, err := g.Open()
	if err != nil {
		return nil, err
	}
	defer data.Close()
	b := make([]byte, t.Bytes)
	if err := data.ReadTensor(t.Name, b); err != nil {
		return nil, err
	}
	f := make([]float32, len(b)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	if !slices.ContainsFunc(f, func(x float32) bool { return x != 1 }) {
		return nil, nil
	}
	s := &RopeScaling{Type: RopeFreqs, Divisors: f}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// KindsSummary counts the tensors of each kind, the most common first:
// "Q4_K 193 tensors, Q6_K 32 tensors, F32 65 tensors".
func (g *GGUF) KindsSummary() string {
	count := map[quant.Kind]int{}
	for _, t := range g.Tensors {
		count[t.Kind]++
	}
	kinds := slices.Collect(maps.Keys(count))
	slices.SortFunc(kinds, func(a, b quant.Kind) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return int(a) - int(b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		unit := "tensors"
		if count[k] == 1 {
			unit = "tensor"
		}
		parts[i] = fmt.Sprintf("%s %d %s", strings.ToUpper(k.String()), count[k], unit)
	}
	return strings.Join(parts, ", ")
}

// GGUFData is a GGUF file's tensor data, memory-mapped: ReadTensor copies
// out one tensor at a time, so that a model is never read whole.
type GGUFData struct {
	g     *GGUF
	r     *mmap.ReaderAt
	index map[string]int // g.Tensors' indices by name
}

// Open maps g's file for reading its tensors; it refuses a file whose
// size changed since it was read. Close unmaps it.
func (g *GGUF) Open() (*GGUFData, error) {
	r, err := mmap.Open(g.Path)
	if err != nil {
		return nil, escapePath(err)
	}
	if int64(r.Len()) != g.Size {
		r.Close()
		return nil, fmt.Errorf("%s is %d bytes, %d when its table was read: it changed", termsafe.Short(g.Path), r.Len(), g.Size)
	}
	index := make(map[string]int, len(g.Tensors))
	for i, t := range g.Tensors {
		index[t.Name] = i
	}
	return &GGUFData{g: g, r: r, index: index}, nil
}

// ReadTensor copies the bytes of the tensor name (its Bytes, as GGUF
// stores them: ggml's blocks, rows in the file's order) into dst, which
// must be exactly that long. The range is checked against the mapping's
// length: nothing is read past the file.
func (d *GGUFData) ReadTensor(name string, dst []byte) error {
	i, ok := d.index[name]
	var t GGUFTensor
	if ok {
		t = d.g.Tensors[i]
	}
	switch {
	case !ok:
		return fmt.Errorf("%s: no tensor %s", termsafe.Short(d.g.Path), termsafe.Short(name))
	case int64(len(dst)) != t.Bytes:
		return fmt.Errorf("%s: %s has %d bytes, given a buffer of %d", termsafe.Short(d.g.Path), t.Name, t.Bytes, len(dst))
	case t.Offset < 0 || t.Offset > int64(d.r.Len())-t.Bytes:
		return fmt.Errorf("%s: %s's bytes [%d, %d) are beyond its %d", termsafe.Short(d.g.Path), t.Name, t.Offset, t.Offset+t.Bytes, d.r.Len())
	}
	if _, err := d.r.ReadAt(dst, t.Offset); err != nil {
		return fmt.Errorf("%s: reading %s: %w", termsafe.Short(d.g.Path), t.Name, err)
	}
	return nil
}

// Close unmaps the file.
func (d *GGUFData) Close() error { return d.r.Close() }
