//go:build ignore

// gen_input writes ggml_input.f32, the 4096 float32s (little-endian) of
// TestQuantizeGGML: go run gen_input.go (in this folder).
package main

import (
	"encoding/binary"
	"log"
	"math"
	"math/rand/v2"
	"os"
)

func main() {
	r := rand.New(rand.NewPCG(42, 1))
	x := make([]float32, 0, 4096)
	for range 1024 { // weight-like
		x = append(x, float32(r.NormFloat64()*0.02))
	}
	for i := range 1024 { // test-quantize-fns' generate_data
		x = append(x, float32(0.1+2*math.Cos(float64(float32(i)))))
	}
	for b := range 16 { // amax 127, so that 1/d = 1 and the halves are ties
		blk := make([]float32, 32)
		for j := range blk {
			blk[j] = float32(r.IntN(253)-126) + 0.5*float32(r.IntN(2))
		}
		blk[r.IntN(32)] = 127
		if b%2 == 1 {
			for j := range blk {
				blk[j] = -blk[j]
			}
		}
		x = append(x, blk...)
	}
	for b := range 16 { // scales 1e-8 to 1e3, and special blocks
		scale := float32(math.Pow(10, -8+11*r.Float64()))
		blk := make([]float32, 32)
		for j := range blk {
			blk[j] = scale * float32(r.Float64()*2-1)
		}
		switch b {
		case 0: // zeros
			clear(blk)
		case 1: // a constant
			for j := range blk {
				blk[j] = 0.3
			}
		case 2: // all negative
			for j := range blk {
				blk[j] = -float32(math.Abs(float64(blk[j])))
			}
		case 3: // an outlier
			blk[7] = scale * 40
		case 4: // tiny
			for j := range blk {
				blk[j] = 1e-30 * float32(j-16)
			}
		case 5: // so tiny that 1/d overflows
			for j := range blk {
				blk[j] = 2e-38 * float32(j-16)
			}
		}
		x = append(x, blk...)
	}
	for i := range 1024 { // Q4_K sub-blocks of ranges 2^-4 to 2^3, some offset
		j := (i / 32) % 8
		x = append(x, float32(math.Ldexp(r.Float64()*2-1, j-4))+float32(j%3)*0.1)
	}
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	if err := os.WriteFile("ggml_input.f32", b, 0o644); err != nil {
		log.Fatal(err)
	}
}
