package quant

import "testing"

// TestKinds checks each kind's name, block, sizes and ggml type number
// against the formats: ggml-common.h's block structs and ggml.h's
// enum ggml_type.
func TestKinds(t *testing.T) {
	tests := []struct {
		kind        Kind
		name        string
		block       int
		rowBytes    int64 // of a row of 512 weights
		bits        float64
		ggml        uint32
		ggmlDefined bool
	}{
		{F32, "f32", 1, 2048, 32, 0, true},
		{F16, "f16", 1, 1024, 16, 1, true},
		{BF16, "bf16", 1, 1024, 16, 30, true},
		{Q8_0, "q8_0", 32, 16 * 34, 8.5, 8, true},
		{Q4_0, "q4_0", 32, 16 * 18, 4.5, 2, true},
		{Q4_K, "q4_k", 256, 2 * 144, 4.5, 12, true},
		{Q6_K, "q6_k", 256, 2 * 210, 6.5625, 14, true},
		{NF4, "nf4", 64, 0, 4 + 8.0/64 + 32.0/(64*256), 0, false},
	}
	if len(tests) != len(Kinds) {
		t.Fatalf("%d kinds, %d cases", len(Kinds), len(tests))
	}
	for i, tt := range tests {
		k := tt.kind
		if Kinds[i] != k || k.String() != tt.name {
			t.Errorf("kind %d: %v named %q, want %v named %q", i, Kinds[i], k.String(), k, tt.name)
		}
		if p, err := Parse(tt.name); err != nil || p != k {
			t.Errorf("Parse(%q) = %v, %v", tt.name, p, err)
		}
		if k.BlockWeights() != tt.block || k.BitsPerWeight() != tt.bits {
			t.Errorf("%v: %d weights a block, %g bits a weight; want %d, %g", k, k.BlockWeights(), k.BitsPerWeight(), tt.block, tt.bits)
		}
		if k != NF4 && k.RowBytes(512) != tt.rowBytes {
			t.Errorf("%v: a row of 512 is %d bytes, want %d", k, k.RowBytes(512), tt.rowBytes)
		}
		g, ok := k.GGML()
		if ok != tt.ggmlDefined || g != tt.ggml {
			t.Errorf("%v.GGML() = %d, %v; want %d, %v", k, g, ok, tt.ggml, tt.ggmlDefined)
		}
		if back, ok := FromGGML(g); tt.ggmlDefined && (!ok || back != k) {
			t.Errorf("FromGGML(%d) = %v, %v; want %v", g, back, ok, k)
		}
	}
	if _, ok := FromGGML(13); ok { // Q5_K: not implemented
		t.Error("FromGGML(13) (Q5_K) is accepted")
	}
}
