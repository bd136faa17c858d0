package ops

import (
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
)

// The key-value cache's ops are forward only (a cache is evaluation
// state): they have no gradient, so the float64 gradient checks do not
// apply; their Launch is checked against Do here, and their values
// against a full forward pass by the models' generation tests.

// prefill and decode size a cache of 5 positions over 4 query heads of 3
// sharing 2 key and value heads: 2 sequences of 2 new tokens from
// position 2, and one new token at the cache's last position.
var (
	prefill = CacheConfig{Heads: 4, KVHeads: 2, HeadDim: 3, Seq: 2, Context: 5}
	decode  = CacheConfig{Heads: 4, KVHeads: 2, HeadDim: 3, Seq: 1, Context: 5}
)

var cacheLaunchCases = []launchCase{
	{name: "CacheWrite", op: CacheWrite{prefill}, shapes: []tensor.Shape{{2, 2, 2, 5, 3}, {4, 24}, {2, 2}},
		fixed: map[int][]float32{2: {2, 3, 2, 3}}},
	{name: "CacheWriteDecode", op: CacheWrite{decode}, shapes: []tensor.Shape{{2, 2, 2, 5, 3}, {2, 24}, {2, 1}},
		fixed: map[int][]float32{2: {4, 4}}},
	{name: "CacheAttend", op: CacheAttend{prefill}, shapes: []tensor.Shape{{4, 24}, {2, 2, 2, 5, 3}, {2, 2}},
		fixed: map[int][]float32{2: {2, 3, 2, 3}}},
	{name: "CacheAttendDecode", op: CacheAttend{decode}, shapes: []tensor.Shape{{2, 24}, {2, 2, 2, 5, 3}, {2, 1}},
		fixed: map[int][]float32{2: {4, 4}}},
}

// TestCacheBadPosition checks that a position the cache cannot hold, or
// one that is not an integer, is an error, not a write out of bounds.
func TestCacheBadPosition(t *testing.T) {
	kv := tensor.New(tensor.WithShape(2, 2, 2, 5, 3), tensor.WithBacking(make([]float32, 120)))
	qkv := tensor.New(tensor.WithShape(4, 24), tensor.WithBacking(make([]float32, 96)))
	for _, tc := range []struct {
		start float32
		want  string
	}{
		{4, "cannot hold 2 new tokens from position 4"},
		{-1, "must not be negative"},
		{1.5, "not an integer"},
	} {
		pos := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float32{tc.start, tc.start + 1, tc.start, tc.start + 1}))
		for _, spec := range []Spec{CacheWrite{prefill}, CacheAttend{prefill}} {
			args := []gorgonia.Value{kv, qkv, pos}
			if _, ok := spec.(CacheAttend); ok {
				args = []gorgonia.Value{qkv, kv, pos}
			}
			_, err := New(spec).Do(args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v at %v: error %v, want one saying %q", name(spec), tc.start, err, tc.want)
			}
		}
	}
}

// TestCacheCostHalf checks the cache ops' work on a 16-bit cache
// (CostHalf): the attention reads the cache's 2·120 elements at 2 bytes
// instead of 4, the write stores the 48 new keys and values at 2 bytes
// (still reading them from qkv at 4); the arithmetic is unchanged.
func TestCacheCostHalf(t *testing.T) {
	for _, tc := range []struct {
		spec              Spec
		shapes            []tensor.Shape
		lessRead, lessOut int64
	}{
		{CacheAttend{decode}, []tensor.Shape{{2, 24}, {2, 2, 2, 5, 3}, {2, 1}}, 2 * 120, 0},
		{CacheWrite{prefill}, []tensor.Shape{{2, 2, 2, 5, 3}, {4, 24}, {2, 2}}, 0, 2 * 48},
	} {
		o := New(tc.spec).(interface {
			Cost([]tensor.Shape) device.Cost
			CostHalf([]tensor.Shape) device.Cost
		})
		full, half := o.Cost(tc.shapes), o.CostHalf(tc.shapes)
		want := full
		want.ReadBytes -= tc.lessRead
		want.WriteBytes -= tc.lessOut
		if half != want {
			t.Errorf("%s: CostHalf %+v, want %+v (Cost %+v)", name(tc.spec), half, want, full)
		}
	}
}
