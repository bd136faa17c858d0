package engine

import (
	"slices"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/half"
	"gpuz/internal/levers"
	"gpuz/internal/ops"
)

// cacheGraph is one layer's key-value cache over one head of 2 (a block's
// state of 4 positions), written and attended by a pass of one new token:
// qkv and pos its inputs, out its attention output.
type cacheGraph struct {
	g               *gorgonia.ExprGraph
	kv, qkv, pos    *gorgonia.Node
	written, out    *gorgonia.Node
	blocks          []Block
	cfg             ops.CacheConfig
	inputs, outputs []*gorgonia.Node
}

func newCacheGraph(t *testing.T) cacheGraph {
	t.Helper()
	c := cacheGraph{g: gorgonia.NewGraph(), cfg: ops.CacheConfig{Heads: 1, HeadDim: 2, Seq: 1, Context: 4}}
	tensorOf := func(name string, shape ...int) *gorgonia.Node {
		return gorgonia.NewTensor(c.g, tensor.Float32, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name))
	}
	c.kv, c.qkv, c.pos = tensorOf("kv", 2, 1, 1, 4, 2), tensorOf("qkv", 1, 6), tensorOf("pos", 1, 1)
	var err error
	if c.written, err = ops.Apply(ops.CacheWrite{CacheConfig: c.cfg}, c.kv, c.qkv, c.pos); err != nil {
		t.Fatal(err)
	}
	if c.out, err = ops.Apply(ops.CacheAttend{CacheConfig: c.cfg}, c.qkv, c.written, c.pos); err != nil {
		t.Fatal(err)
	}
	c.blocks = []Block{{Name: "layer", State: []*gorgonia.Node{c.kv}}}
	c.inputs, c.outputs = []*gorgonia.Node{c.qkv, c.pos}, []*gorgonia.Node{c.out}
	return c
}

// TestStateWrittenInPlace checks that a block's state is counted as such,
// written in place by its pass at the position fed, and kept from one
// pass to the next: after three tokens the cache holds their keys and
// values at positions 0 to 2 and zeros after.
func TestStateWrittenInPlace(t *testing.T) {
	c := newCacheGraph(t)
	sc, err := Compile(Spec{Inputs: c.inputs, Blocks: c.blocks, Passes: c.outputs})
	if err != nil {
		t.Fatal(err)
	}
	if b := sc.Bytes(); b.State != 4*2*4*2 || b.Parameters != 0 {
		t.Errorf("bytes %+v, want a state of 64 bytes and no parameters", b)
	}
	prog, err := sc.Load(device.NewHost(), Resident{})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := prog.SetInput(c.kv, make([]float32, 16)); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 16)
	for p := range 3 {
		qkv := []float32{1, 1, float32(10 * (p + 1)), float32(10*(p+1) + 1), float32(-p - 1), float32(-p - 2)}
		copy(want[2*p:], qkv[2:4])
		copy(want[8+2*p:], qkv[4:6])
		if err := prog.SetInput(c.qkv, qkv); err != nil {
			t.Fatal(err)
		}
		if err := prog.SetInput(c.pos, []float32{float32(p)}); err != nil {
			t.Fatal(err)
		}
		if err := prog.RunPass(0); err != nil {
			t.Fatal(err)
		}
	}
	got, err := prog.Read(c.kv)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("cache %v, want %v", got, want)
	}
	if _, err := prog.Run(); err == nil {
		t.Error("Run of a schedule of passes accepted")
	}
}

// TestPassesAndStateRefused checks the specs Compile refuses: a state in
// training, an Output beside passes, a step two passes need, and an op
// that overwrites an input that is no state.
func TestPassesAndStateRefused(t *testing.T) {
	c := newCacheGraph(t)
	loss, err := ops.Apply(ops.Mean{Dims: 2}, c.out)
	if err != nil {
		t.Fatal(err)
	}
	notState, err := ops.Apply(ops.CacheWrite{CacheConfig: c.cfg}, c.kv, c.qkv, c.pos)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"training", Spec{Inputs: c.inputs, Blocks: c.blocks, Output: loss, Train: true}, "state is for evaluation only"},
		{"output and passes", Spec{Inputs: c.inputs, Blocks: c.blocks, Output: loss, Passes: c.outputs}, "has no Output"},
		{"a shared step", Spec{Inputs: c.inputs, Blocks: c.blocks, Passes: []*gorgonia.Node{c.out, loss}}, "both need"},
		{"an input overwritten", Spec{Inputs: append(c.inputs, c.kv), Passes: []*gorgonia.Node{notState}}, "not a block's state"},
	} {
		_, err := Compile(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// TestStateHalf checks a block's state stored in 16 bits
// (Spec.StatePrecision), under fp32 and under each 16-bit precision, that
// of the other format included: it is counted at 2 bytes an element, the
// cache ops take it as stored, the writes round each new key and value
// into it in place (read back, the cache holds them rounded to the
// state's format, as package half rounds, and zeros after), and the
// attention reads it as stored: its output has the same bits as a float32
// cache's fed the keys and values rounded alike; Work counts the cache's
// bytes at 2 an element, with no conversion. An op that would read the
// 16-bit state widened is refused.
func TestStateHalf(t *testing.T) {
	round := func(f half.Format, x float32) float32 {
		if f == half.FP16 {
			return half.FP16ToFloat32(half.FP16FromFloat32(x))
		}
		return half.BF16ToFloat32(half.BF16FromFloat32(x))
	}
	qkvAt := func(p int) []float32 {
		x := float32(p + 1)
		return []float32{0.3, -0.7, 10.123 * x, 1.0001 * x, -0.31 * x, 0.777 * x}
	}
	for _, state := range []levers.Precision{levers.BF16, levers.FP16} {
		f := formatOf(state)
		for _, precision := range levers.Precisions() {
			t.Run(string(state)+"/"+string(precision), func(t *testing.T) {
				c := newCacheGraph(t)
				sc, err := Compile(Spec{Inputs: c.inputs, Blocks: c.blocks, Passes: c.outputs, Precision: precision, StatePrecision: state})
				if err != nil {
					t.Fatal(err)
				}
				if b := sc.Bytes(); b.State != 2*2*4*2 {
					t.Errorf("bytes %+v, want a state of 32 bytes", b)
				}
				ref, err := Compile(Spec{Inputs: c.inputs, Blocks: c.blocks, Passes: c.outputs})
				if err != nil {
					t.Fatal(err)
				}
				// The write stores 4 elements, the attention reads 16: 2
				// bytes each less than in float32, no conversion.
				if w, w32 := sc.Work(), ref.Work(); w.Bytes != w32.Bytes-2*(4+16) || w.Launches != w32.Launches || w.FLOPs != w32.FLOPs {
					t.Errorf("work %+v, want a float32 cache's %+v less 40 bytes", w, w32)
				}
				prog, err := sc.Load(device.NewHost(), Resident{})
				if err != nil {
					t.Fatal(err)
				}
				defer prog.Close()
				refProg, err := ref.Load(device.NewHost(), Resident{})
				if err != nil {
					t.Fatal(err)
				}
				defer refProg.Close()
				want := make([]float32, 16)
				for p := range 3 {
					qkv, rounded := qkvAt(p), qkvAt(p)
					for j := 2; j < 6; j++ {
						rounded[j] = round(f, qkv[j])
					}
					copy(want[2*p:], rounded[2:4])
					copy(want[8+2*p:], rounded[4:6])
					got := make([][]float32, 2)
					for i, run := range []struct {
						prog *Program
						qkv  []float32
					}{{prog, qkv}, {refProg, rounded}} {
						if err := run.prog.SetInput(c.qkv, run.qkv); err != nil {
							t.Fatal(err)
						}
						if err := run.prog.SetInput(c.pos, []float32{float32(p)}); err != nil {
							t.Fatal(err)
						}
						if err := run.prog.RunPass(0); err != nil {
							t.Fatal(err)
						}
						if got[i], err = run.prog.Read(c.out); err != nil {
							t.Fatal(err)
						}
					}
					if !slices.Equal(got[0], got[1]) {
						t.Errorf("position %d: attention %v, want %v (a float32 cache of the rounded keys and values)", p, got[0], got[1])
					}
				}
				got, err := prog.Read(c.kv)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("cache %v, want %v", got, want)
				}
			})
		}
	}
	c := newCacheGraph(t)
	sum, err := ops.Apply(ops.Add{}, c.kv, c.kv)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(Spec{Inputs: c.inputs, Blocks: c.blocks, Passes: []*gorgonia.Node{sum}, StatePrecision: levers.BF16})
	if want := "cannot read the bf16 state kv as stored"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a state widened: error %v, want one saying %q", err, want)
	}
}
