package gpu

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"strings"
)

//go:embed prologue.cuh *.cu
var sources embed.FS

// sourceFiles are the kernel files in the order they are compiled, the
// prologue first.
var sourceFiles = []string{"prologue.cuh", "elementwise.cu", "reduce.cu", "softmax.cu", "layernorm.cu", "embedding.cu", "gpt2.cu", "conv.cu", "attention.cu", "fusedattention.cu", "half.cu",
	"llama.cu"}

// Source returns the CUDA C of every kernel as one translation unit, as
// NVRTC compiles it.
func Source() string {
	var b strings.Builder
	for _, f := range sourceFiles {
		data, err := sources.ReadFile(f)
		if err != nil {
			panic("gpu: embedded kernel source missing: " + f) // the embed pattern guarantees it
		}
		b.WriteString("// ---- " + f + "\n")
		b.Write(data)
		b.WriteString("\n")
	}
	return b.String()
}

// Hash identifies the kernel sources and the compile options: the name of
// the cached PTX.
func Hash(options []string) string {
	h := sha256.New()
	h.Write([]byte(Source()))
	for _, o := range options {
		h.Write([]byte{0})
		h.Write([]byte(o))
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}
