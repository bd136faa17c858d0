// Package memhog holds device memory until told to stop: the work of gpuz
// take-mem, which creates the memory pressure that the cache mode is
// measured under. It holds memory the way the reference did, as linear
// blocks of 10 × Linear(2000→2000) weights and biases, and can keep the
// device busy with forward passes through them.
package memhog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gpuz/internal/device"
)

// The shape of what the reference's take-mem held: blocks of LayersPerBlock
// Linear(LayerDims→LayerDims) layers.
const (
	LayerDims      = 2000
	LayersPerBlock = 10
	// BusyBatch is the rows of the input of a busy forward pass, the batch
	// of the linear workload.
	BusyBatch = 30
	// BusyInterval is the time between the starts of busy passes.
	BusyInterval = time.Second
)

// layerElems is one Linear(2000→2000) layer's weights and bias.
const layerElems = LayerDims*LayerDims + LayerDims

// LayerBytes is the bytes of one Linear(2000→2000) layer: 16,008,000.
const LayerBytes = 4 * layerElems

// BlocksBytes is the bytes of n linear blocks, n × 10 × (2000·2000 + 2000)
// float32 elements: 160,080,000 bytes a block.
func BlocksBytes(n int) int64 { return int64(n) * LayersPerBlock * LayerBytes }

// busyScratchBytes is the memory a busy pass works in besides the layers:
// its input and output, BusyBatch rows each.
const busyScratchBytes = 2 * 4 * BusyBatch * LayerDims

// BusyMinBytes is the least that Hold can hold with busy passes: one layer
// and the pass's input and output.
const BusyMinBytes = LayerBytes + busyScratchBytes

// EventKind says what an Event reports.
type EventKind int

// The events of Hold, in the order they happen.
const (
	Holding  EventKind = iota // the memory is held
	BusyPass                  // a busy pass has run
	Released                  // the memory is released
)

// Event reports progress of Hold.
type Event struct {
	Kind  EventKind
	Bytes int64 // bytes held on the device
	// Pass counts busy passes from 1, and Duration is the pass's; BusyPass
	// only.
	Pass     int
	Duration time.Duration
}

// Hold takes bytes of dev's memory and holds it until ctx is done, then
// releases it and returns nil. It reports Holding once the memory is held,
// then BusyPass after each busy pass, then Released; report may be nil. If
// the memory is not free it returns a *device.OutOfMemoryError for the
// whole amount and holds nothing. If ctx is done before the memory is
// held, Hold stops taking it within one touchChunk's write, releases what
// it took, reports nothing and returns ctx's error: taking gigabytes of
// host memory takes seconds.
//
// On a device that holds memory unallocated (its Caps().Holder: the
// simulated device) the memory is reserved, not allocated: the device and
// every process sharing its ledger count it as taken, but the host's
// memory is not consumed. Elsewhere it is
// allocated as Linear(2000→2000) layers, each weights and bias, plus one
// buffer for what does not fill a layer, and every element is written, so
// that on the host the pages are really taken and not only mapped.
//
// With busy, a forward pass runs at once and then every BusyInterval: a
// Linear(2000→2000) + LeakyReLU(0.01) on a BusyBatch-row input through every
// layer held, as the reference's take-mem ran through its blocks. When the
// memory is reserved rather than allocated there are no layers to run
// through, so the pass runs one layer per block held (at least one) on a
// single real layer, whose memory and the pass's input and output are
// allocated for real and counted in bytes: the device's kernels then do real
// work, a tenth of the reference's. Busy needs bytes ≥ BusyMinBytes.
//
// Hold releases what it took but does not close dev: whoever opened the
// device closes it (gpuz take-mem does, when Hold returns).
func Hold(ctx context.Context, dev device.Device, bytes int64, busy bool, report func(Event)) error {
	if report == nil {
		report = func(Event) {}
	}
	if bytes < 0 {
		return fmt.Errorf("memhog: cannot hold %d bytes", bytes)
	}
	if busy && bytes < BusyMinBytes {
		return fmt.Errorf("memhog: busy passes need at least %d bytes held (one Linear(%d→%d) layer and its input and output), got %d",
			BusyMinBytes, LayerDims, LayerDims, bytes)
	}
	holder := dev.Caps().Holder
	if holder == nil {
		// A Holder checks and takes in one step, and its error names
		// whoever holds the rest; elsewhere a request that cannot fit is
		// refused before anything is allocated.
		free, total, err := dev.MemInfo()
		if err != nil {
			return fmt.Errorf("memhog: %w", err)
		}
		if bytes > free {
			return &device.OutOfMemoryError{Device: dev.Name(), Requested: bytes, Free: free, Total: total}
		}
	}
	h := &holding{dev: dev, holder: holder}
	if err := h.take(ctx, bytes, busy); err != nil {
		held := h.held
		h.release()
		var oom *device.OutOfMemoryError
		if errors.As(err, &oom) {
			// Something else holds the memory: report the whole request
			// against what was free to it.
			whole := *oom
			whole.Requested, whole.Free = bytes, oom.Free+held
			return &whole
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("memhog: %w", err)
	}
	report(Event{Kind: Holding, Bytes: h.held})
	h.wait(ctx, busy, report)
	h.release()
	report(Event{Kind: Released})
	return nil
}

// wait returns when ctx is done, running busy passes until then if asked.
func (h *holding) wait(ctx context.Context, busy bool, report func(Event)) {
	if !busy {
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(BusyInterval)
	defer tick.Stop()
	for pass := 1; ctx.Err() == nil; pass++ {
		start := time.Now()
		h.forward()
		report(Event{Kind: BusyPass, Bytes: h.held, Pass: pass, Duration: time.Since(start)})
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// holding is the memory Hold holds.
type holding struct {
	dev device.Device
	// holder holds memory on dev without allocating it (dev's
	// Caps().Holder); nil where memory is taken by allocating it.
	holder   device.MemoryHolder
	held     int64
	buffers  []device.Buffer
	releases []func()
	// layers are the weights and biases a busy pass runs through, passes
	// the times it runs through them, and x and y its input and output.
	layers [][2]device.Buffer
	passes int
	x, y   device.Buffer
}

// take holds bytes in h; with busy it also sets up the busy pass. It
// stops with ctx's error when ctx is done before it has finished.
func (h *holding) take(ctx context.Context, bytes int64, busy bool) error {
	if busy {
		xy, err := h.alloc(BusyBatch*LayerDims, BusyBatch*LayerDims)
		if err != nil {
			return err
		}
		h.x, h.y = xy[0], xy[1]
		input := make([]float32, BusyBatch*LayerDims)
		for i := range input {
			input[i] = 1
		}
		if err := h.dev.Upload(h.x, input); err != nil {
			return err
		}
	}
	if h.holder != nil {
		if busy {
			if err := h.allocLayer(); err != nil {
				return err
			}
			h.passes = max(1, int(bytes/BlocksBytes(1)))
		}
		release, err := h.holder.Reserve(bytes - h.held)
		if err != nil {
			return err
		}
		h.releases = append(h.releases, release)
		h.held = bytes
		return nil
	}
	for bytes-h.held >= LayerBytes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := h.allocLayer(); err != nil {
			return err
		}
	}
	if rest := bytes - h.held; rest > 0 {
		if _, err := h.alloc(int((rest + 3) / 4)); err != nil {
			return err
		}
	}
	h.passes = 1
	return h.touch(ctx)
}

// touchValue is what touch writes into every element held.
const touchValue = 0.5

// touchChunk is the most elements touch writes before it checks its
// context again: 4 MiB, a few milliseconds of page faults.
const touchChunk = 1 << 20

// touch writes every element of every buffer held, so that memory which an
// allocation only maps (the host's zeroed pages, which the kernel backs on
// first write) is really taken rather than counted. It writes touchChunk
// elements at a time and stops with ctx's error when ctx is done.
func (h *holding) touch(ctx context.Context) error {
	one, err := h.dev.Alloc(1)
	if err != nil {
		return err
	}
	defer h.dev.Free(one)
	if err := h.dev.Upload(one, []float32{touchValue}); err != nil {
		return err
	}
	k := h.dev.Kernels()
	for _, b := range h.buffers {
		if b == h.x { // the busy pass's input, uploaded already
			continue
		}
		for off := 0; off < b.Len(); off += touchChunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			k.Fill(h.dev.View(b, off, min(touchChunk, b.Len()-off)), one, 1)
		}
	}
	return nil
}

// allocLayer allocates one Linear layer's weights and bias.
func (h *holding) allocLayer() error {
	wb, err := h.alloc(LayerDims*LayerDims, LayerDims)
	if err != nil {
		return err
	}
	h.layers = append(h.layers, [2]device.Buffer{wb[0], wb[1]})
	return nil
}

// alloc allocates a buffer of each size, in float32 elements, which the
// holding counts as held and frees on release.
func (h *holding) alloc(sizes ...int) ([]device.Buffer, error) {
	bufs := make([]device.Buffer, len(sizes))
	for i, n := range sizes {
		b, err := h.dev.Alloc(n)
		if err != nil {
			return nil, err
		}
		h.buffers = append(h.buffers, b)
		h.held += 4 * int64(n)
		bufs[i] = b
	}
	return bufs, nil
}

// forward runs one busy pass: h.passes times through every layer,
// y = LeakyReLU(x·W + b), the output feeding the next layer.
func (h *holding) forward() {
	k := h.dev.Kernels()
	x, y := h.x, h.y
	for range h.passes {
		for _, l := range h.layers {
			k.Gemm(false, false, BusyBatch, LayerDims, LayerDims, x, l[0], y)
			k.AddRowVector(y, l[1])
			k.LeakyReLU(y, y, 0.01)
			x, y = y, x
		}
	}
}

// release frees everything h holds.
func (h *holding) release() {
	for _, r := range h.releases {
		r()
	}
	for _, b := range h.buffers {
		h.dev.Free(b)
	}
	h.releases, h.buffers, h.layers, h.held = nil, nil, nil, 0
}
