package memhog

import (
	"context"
	"errors"
	"testing"

	"gpuz/internal/device"
)

// cancelling is a host device that cancels a context once it has made
// cancelAt allocations or filled cancelAt times, and counts both, so that
// a test can stop Hold at a chosen point of taking its memory.
type cancelling struct {
	*device.Host
	cancel          context.CancelFunc
	allocs, fills   int
	allocAt, fillAt int // 0: never
}

func (d *cancelling) Alloc(n int) (device.Buffer, error) {
	d.allocs++
	if d.allocs == d.allocAt {
		d.cancel()
	}
	return d.Host.Alloc(n)
}

func (d *cancelling) Kernels() device.Kernels { return fillCounter{d.Host.Kernels(), d} }

type fillCounter struct {
	device.Kernels
	d *cancelling
}

func (k fillCounter) Fill(dst, s device.Buffer, scale float32) {
	k.d.fills++
	if k.d.fills == k.d.fillAt {
		k.d.cancel()
	}
	k.Kernels.Fill(dst, s, scale)
}

// TestHoldCancelWhileTaking cancels Hold while it allocates and while it
// writes the pages of one layer: it stops there (no more allocations, at
// most the layer or the fill under way), reports nothing, holds nothing afterwards and
// returns the context's error. It used to allocate and write everything
// first (Ctrl-C took 13 s to act on take-mem 8GiB --device cpu), then
// report Holding and release at once.
func TestHoldCancelWhileTaking(t *testing.T) {
	for _, tt := range []struct {
		name            string
		bytes           int64
		allocAt, fillAt int
		maxAllocs       int
		maxFills        int
	}{
		{"while allocating", 10 * LayerBytes, 3, 0, 4, 0}, // the second layer finished
		{"while writing a layer", LayerBytes, 0, 1, 3, 1}, // a layer's weights, bias, and the fill value
	} {
		ctx, cancel := context.WithCancel(context.Background())
		dev := &cancelling{Host: device.NewHost(), cancel: cancel, allocAt: tt.allocAt, fillAt: tt.fillAt}
		var events []EventKind
		err := Hold(ctx, dev, tt.bytes, false, func(e Event) { events = append(events, e.Kind) })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Hold = %v, want context.Canceled", tt.name, err)
		}
		if dev.allocs > tt.maxAllocs || dev.fills > tt.maxFills {
			t.Errorf("%s: %d allocations and %d fills, want at most %d and %d: Hold went on after the cancel",
				tt.name, dev.allocs, dev.fills, tt.maxAllocs, tt.maxFills)
		}
		if len(events) != 0 {
			t.Errorf("%s: events %v, want none: the memory was never held", tt.name, events)
		}
		if held := dev.Stats().AllocatedBytes; held != 0 {
			t.Errorf("%s: %d bytes held after Hold returned", tt.name, held)
		}
		cancel()
	}
}
