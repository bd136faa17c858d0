//go:build purego

package hostmath

import "gpuz/internal/half"

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

// kvData: no C kernels to read a cache.
type kvData struct{}

func cacheFloat32(keys, values []float32) kvData            { return kvData{} }
func cacheHalf(keys, values []uint16, f half.Format) kvData { return kvData{} }

func cacheAttendFloat32(out, qkv []float32, kv kvData, c KVCache, start int) {
	panic("hostmath: no C cache attention in a purego build")
}
