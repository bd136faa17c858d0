package gpu

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"slices"
	"strings"
)

// shimthunks.h is generated from the sources by TestShimThunks, built
// without cgo so that it runs while a stale header keeps the shim from
// compiling.
//go:generate env CGO_ENABLED=0 go test -tags purego -count=1 -run TestShimThunks . -update

//go:embed prologue.cuh *.cu
var sources embed.FS

// sourceFiles are the kernel files in the order they are compiled: the
// prologue, then every .cu file of the package in name order, so that a
// new file is compiled (by NVRTC, and by gcc in the shim, whose
// shimthunks.h is generated from the same list) without a list to edit. A
// .cu file may use what the prologue and the files before it define
// (fusedattention.cu reads attention.cu's kv_of and limit).
var sourceFiles = append([]string{"prologue.cuh"}, cuFiles()...)

// cuFiles returns the names of the embedded .cu files, sorted.
func cuFiles() []string {
	names, err := fs.Glob(sources, "*.cu")
	if err != nil {
		panic("gpu: " + err.Error()) // only a malformed pattern fails
	}
	slices.Sort(names)
	return names
}

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
