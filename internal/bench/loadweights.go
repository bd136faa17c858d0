package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"gorgonia.org/gorgonia"

	"gpuz/internal/hfconfig"
	"gpuz/internal/models"
	"gpuz/internal/quant"
)

// filePiece is one of a GGUF file's tensors and the first row of the
// parameter it fills (hfconfig.Config.PackedParam).
type filePiece struct {
	t   hfconfig.GGUFTensor
	row int
}

// loadWeights sets every parameter of the mode's model that the GGUF file
// Options.LoadWeights holds to the file's values, one tensor at a time from
// the memory-mapped file, the queries' and keys' rows put back in
// transformers' order where llama.cpp permuted them. A parameter stored
// quantized in its tensors' kind takes their blocks as they are
// (Program.SetStored); any other is dequantized into float32 and set as
// drawn values are (stored in its own kind, quantized again if it is one).
// LoRA's adapters, which no file holds, keep their drawn values. It stops
// before the next parameter once ctx is done, returning ctx's error.
func (m *modeRun) loadWeights(ctx context.Context) error {
	g := m.opts.LoadWeights
	llm, ok := m.opts.Workload.(*models.LLMConfig)
	if !ok {
		return fmt.Errorf("loading %s: the weights of a GGUF file are the llm workload's", g.Path)
	}
	cfg := llm.Model.Config
	pieces := map[string][]filePiece{}
	for _, t := range g.Tensors {
		if t.Param != "" {
			p, row := cfg.PackedParam(t.Param)
			pieces[p] = append(pieces[p], filePiece{t, row})
		}
	}
	data, err := g.Open()
	if err != nil {
		return err
	}
	defer data.Close()
	for _, b := range m.model.Blocks {
		for _, p := range slices.Concat(b.Params, b.Frozen) {
			if err := ctx.Err(); err != nil {
				return err
			}
			ps, ok := pieces[p.Name()]
			switch {
			case !ok && strings.Contains(p.Name(), ".lora_"):
				continue
			case !ok:
				return fmt.Errorf("loading %s: the file holds no tensor for %s", g.Path, p.Name())
			}
			if err := m.loadParam(data, p, ps, cfg.HeadDim); err != nil {
				return fmt.Errorf("loading %s from %s: %w", p.Name(), g.Path, err)
			}
		}
	}
	return nil
}

// loadParam sets parameter p from its pieces of the file.
func (m *modeRun) loadParam(data *hfconfig.GGUFData, p *gorgonia.Node, ps []filePiece, headDim int) error {
	rows, cols := p.Shape()[0], 1 // a vector's rows are its elements
	if s := p.Shape(); len(s) == 2 {
		cols = s[1]
	}
	kind, quantized := m.prog.StoredKind(p)
	raw := quantized && !slices.ContainsFunc(ps, func(fp filePiece) bool { return fp.t.Kind != kind })
	if !raw {
		kind = quant.F32
	}
	rb := int(kind.RowBytes(cols))
	out := make([]byte, int(kind.Bytes(rows, cols)))
	covered := 0
	for _, fp := range ps {
		t := fp.t
		if len(p.Shape()) == 2 && (len(t.Dims) != 2 || t.Dims[0] != int64(cols)) {
			return fmt.Errorf("%s's dimensions %v do not give rows of %d", t.Name, t.Dims, cols)
		}
		b := make([]byte, t.Bytes)
		if err := data.ReadTensor(t.Name, b); err != nil {
			return err
		}
		n := int(t.Bytes / t.Kind.RowBytes(cols))
		if fp.row+n > rows {
			return fmt.Errorf("%s's %d rows from row %d overrun the parameter's %d", t.Name, n, fp.row, rows)
		}
		if !raw { // the rows widened to float32's bytes
			f := make([]float32, n*cols)
			if err := quant.Dequantize(t.Kind, f, b, n, cols); err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
			b = float32Bytes(f)
		}
		for r := range n {
			src := r
			if t.RopePermuted {
				src = hfconfig.RopeFileRow(r, headDim)
			}
			copy(out[(fp.row+r)*rb:(fp.row+r+1)*rb], b[src*rb:(src+1)*rb])
		}
		covered += n
	}
	if covered != rows {
		return fmt.Errorf("the file's tensors give %d of its %d rows", covered, rows)
	}
	if raw {
		return m.prog.SetStored(p, out)
	}
	return m.prog.SetInput(p, bytesFloat32(out))
}

// float32Bytes returns the bytes of f, little-endian as the host stores
// them.
func float32Bytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}

// bytesFloat32 returns b, a multiple of 4 bytes, as float32s.
func bytesFloat32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	copy(float32Bytes(out), b)
	return out
}
