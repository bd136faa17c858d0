//go:build purego

package hostmath

// kvCacheC is false without cgo: the float32 cache attention runs the Go
// kernel.
var kvCacheC = false

// kvCacheISA and kvCacheISAs: no C kernels.
var (
	kvCacheISA, kvCacheBest = 0, 0
	kvCacheISAs             []struct {
		name string
		isa  int
	}
)

func cacheAttendFloat32(out, qkv, keys, values []float32, c KVCache, start int) {
	panic("hostmath: no C cache attention in a purego build")
}
