//go:build !gpuzcuda && cgo

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/selftest"
)

// runHost runs a case on the host device.
func runHost(t *testing.T, c selftest.Case, data [][]float32) ([][]float32, float64, error) {
	h := device.NewHost()
	b := make([]device.Buffer, len(data))
	for i, d := range data {
		var err error
		if b[i], err = h.Alloc(len(d)); err != nil {
			t.Fatal(err)
		}
		if err := h.Upload(b[i], d); err != nil {
			t.Fatal(err)
		}
	}
	v, err := c.Call(h.Kernels(), b)
	out := make([][]float32, len(b))
	for i := range b {
		out[i] = append([]float32(nil), device.Floats(b[i])...)
	}
	return out, v, err
}

// runShim runs a case on the shim in an order, checking the guard zones.
func runShim(t *testing.T, c selftest.Case, data [][]float32, order Order) ([][]float32, float64, error) {
	ws := c.Workspace
	if ws == 0 {
		ws = 1 << 16
	}
	s := NewShim(order, 42, ws)
	defer s.Free()
	b := make([]device.Buffer, len(data))
	for i, d := range data {
		sb := s.Alloc(len(d))
		copy(sb.Floats(), d)
		b[i] = sb
	}
	v, err := c.Call(Dispatcher{L: s}, b)
	if err == nil {
		err = s.Err()
	}
	if gerr := s.CheckGuards(); gerr != nil {
		t.Fatalf("%s: %v", order, gerr)
	}
	out := make([][]float32, len(b))
	for i := range b {
		out[i] = append([]float32(nil), b[i].(*ShimBuffer).Floats()...)
	}
	return out, v, err
}

// TestKernelsMatchHost runs every kernel on the shim in three orders
// against the host kernels: the results must be within the tolerance of
// the host's, bit-identical across orders (the kernels are deterministic
// whatever the scheduling), no output may keep the allocation marker, no
// guard zone may be written, and errors must be the host's.
func TestKernelsMatchHost(t *testing.T) {
	for _, c := range selftest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			data := c.Bufs(rand.New(rand.NewPCG(1, uint64(len(c.Name)))))
			want, wantV, wantErr := runHost(t, c, data)
			var first [][]float32
			for _, order := range []Order{Forward, Reverse, Shuffled} {
				got, gotV, err := runShim(t, c, data, order)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("%s: error %v, host %v", order, err, wantErr)
				}
				if wantErr != nil {
					continue
				}
				if d := math.Abs(gotV - wantV); d > selftest.RelTol*math.Abs(wantV) {
					t.Errorf("%s: value %v, host %v", order, gotV, wantV)
				}
				for i := range got {
					compareBuffer(t, fmt.Sprintf("%s: buffer %d", order, i), got[i], want[i])
				}
				if first == nil {
					first = got
					continue
				}
				for i := range got {
					for j := range got[i] {
						if math.Float32bits(got[i][j]) != math.Float32bits(first[i][j]) {
							t.Fatalf("%s: buffer %d element %d = %v, forward order gave %v: the result depends on the schedule", order, i, j, got[i][j], first[i][j])
						}
					}
				}
			}
		})
	}
}

func compareBuffer(t *testing.T, what string, got, want []float32) {
	t.Helper()
	scale := selftest.FiniteScale(want)
	for j := range got {
		if isMarker(got[j]) {
			t.Fatalf("%s: element %d was never written", what, j)
		}
		g, w := float64(got[j]), float64(want[j])
		if g == w || math.Float32bits(got[j]) == math.Float32bits(want[j]) {
			continue // the host's, bit for bit: a quantized weight's words may read as NaN
		}
		if math.IsNaN(g) || math.IsInf(w, 0) || math.Abs(g-w) > selftest.RelTol*math.Abs(w)+selftest.AbsTol*scale {
			t.Fatalf("%s: element %d = %v, host %v (tolerance %.1e relative + %.1e of %.3g)", what, j, g, w, selftest.RelTol, selftest.AbsTol, scale)
		}
	}
}

// TestSignaturesMatchShim checks that the shim's thunks and Signatures
// name the same kernels with the same parameter kinds.
func TestSignaturesMatchShim(t *testing.T) {
	compareSignatures(t, "shim", ShimKernels(), "Signatures", Signatures)
}
