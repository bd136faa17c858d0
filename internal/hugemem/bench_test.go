package hugemem

import (
	"os"
	"runtime/debug"
	"testing"
)

// BenchmarkFirstTouch measures what a buffer costs the first time it is
// written, as a run's first epoch writes its buffers: allocate 256 MiB,
// write one element per small page, free it. "heap" is a Go slice, as
// before hugemem, handed back to the system after each use; "fresh" is
// Alloc, mapped for huge pages where the kernel offers them and faulted
// in on every core, handed back after each use (releaseKept), as in a new
// process; "kept" is Alloc taking the mapping Free kept, zeroed, as a
// run's next mode does. It reports the rate in GB/s of buffer made ready.
func BenchmarkFirstTouch(b *testing.B) {
	const n = 64 << 20 // 256 MiB of float32
	stride := os.Getpagesize() / 4
	for _, bc := range []struct {
		name  string
		alloc func() (data []float32, free func())
	}{
		{"heap", func() ([]float32, func()) {
			// Handing the memory back (as between a run's modes) makes
			// the next slice fresh memory, as in a new process.
			return make([]float32, n), debug.FreeOSMemory
		}},
		{"fresh", func() ([]float32, func()) {
			f, err := Alloc(n)
			if err != nil {
				b.Fatal(err)
			}
			return f.Data, func() { f.Free(); releaseKept() }
		}},
		{"kept", func() ([]float32, func()) {
			f, err := Alloc(n)
			if err != nil {
				b.Fatal(err)
			}
			return f.Data, f.Free
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				data, free := bc.alloc()
				for i := 0; i < len(data); i += stride {
					data[i] = 1
				}
				free()
			}
		})
	}
}
