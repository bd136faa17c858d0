package gguf

import (
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"

	"gpuz/internal/hfconfig"
)

// TestLlamaFileReadBack writes each tiny model at F32 and reads it back
// as a model (hfconfig.Load): the configuration it was written from (but
// for how llama3 scaling is kept, and qwen2's model_type: the file is
// llama's architecture), and every parameter of gpuz's recovered from the
// file's tensors through the table hfconfig reads (GGUF.Open,
// ReadTensor), the queries' and keys' rows put back in transformers'
// order by RopeFileRow, the packed parts placed by their Projection.
func TestLlamaFileReadBack(t *testing.T) {
	for _, tm := range tinyLlamas {
		t.Run(tm.name, func(t *testing.T) {
			want := tinyModel(t, tm.config)
			path, params := exportModel(t, want, want.Layers, 3, F32, F32, nil)
			m, err := hfconfig.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			got, wc := m.Config, want.Config
			got.RopeScaling, wc.RopeScaling = nil, nil
			wc.ModelType, wc.SlidingWindow, wc.Defaulted, wc.Dropouts = "llama", 0, "", ""
			if !reflect.DeepEqual(got, wc) {
				t.Errorf("Config\n got %+v\nwant %+v", got, wc)
			}
			data, err := m.GGUF.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer data.Close()
			// Rebuild each gpuz parameter from its tensors.
			rebuilt := map[string][]float32{}
			for _, tt := range m.GGUF.Tensors {
				if tt.Param == "" {
					continue // rope_freqs.weight
				}
				b := make([]byte, tt.Bytes)
				if err := data.ReadTensor(tt.Name, b); err != nil {
					t.Fatal(err)
				}
				v := make([]float32, len(b)/4)
				for i := range v {
					v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
				}
				width := int(tt.Dims[0])
				if len(tt.Dims) == 1 {
					width = 1
				}
				if tt.RopePermuted {
					rows := make([]float32, len(v))
					for r := range len(v) / width {
						f := hfconfig.RopeFileRow(r, m.HeadDim)
						copy(rows[r*width:(r+1)*width], v[f*width:(f+1)*width])
					}
					v = rows
				}
				param, off := gpuzParam(m.Config, tt.Param)
				p := rebuilt[param]
				if need := off*width + len(v); len(p) < need {
					p = append(p, make([]float32, need-len(p))...)
				}
				copy(p[off*width:], v)
				rebuilt[param] = p
			}
			for name, values := range params {
				if !reflect.DeepEqual(rebuilt[name], values) {
					t.Errorf("%s: read back differs from what was written", name)
				}
			}
			if len(rebuilt) != len(params) {
				t.Errorf("%d parameters read back, %d written", len(rebuilt), len(params))
			}
		})
	}
}

// gpuzParam returns gpuz's parameter that holds transformers' tensor
// param, and the row it begins at: the packed q, k, v and gate, up
// modules' parts at their offsets.
func gpuzParam(c hfconfig.Config, param string) (string, int) {
	for _, r := range []hfconfig.Role{hfconfig.QKV, hfconfig.Up} {
		p := c.Projection(r)
		for _, part := range p.Parts {
			if prefix, suffix, ok := strings.Cut(param, "."+part.Name+"."); ok {
				return prefix + "." + p.Name + "." + suffix, part.Off
			}
		}
	}
	return param, 0
}
