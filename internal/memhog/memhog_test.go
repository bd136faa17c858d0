package memhog

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"gpuz/internal/device"
)

func TestBlocksBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want int64
	}{
		{0, 0},
		{1, 160_080_000},
		{12, 1_920_960_000},
		{20, 3_201_600_000},
	} {
		if got := BlocksBytes(tt.n); got != tt.want {
			t.Errorf("BlocksBytes(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

// hold runs Hold in the background, calls check on the Holding event, and
// stops it after the first event of kind stopAt. It returns the events.
func hold(t *testing.T, dev device.Device, bytes int64, busy bool, stopAt EventKind, check func(Event)) []EventKind {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var kinds []EventKind
	err := Hold(ctx, dev, bytes, busy, func(e Event) {
		kinds = append(kinds, e.Kind)
		if e.Kind == Holding {
			check(e)
		}
		if e.Kind == stopAt {
			cancel()
		}
	})
	if err != nil {
		t.Fatalf("Hold: %v", err)
	}
	if ctx.Err() != context.Canceled {
		t.Fatalf("Hold returned before it was stopped: %v", ctx.Err())
	}
	return kinds
}

// TestHoldSim reserves memory on a simulated device: the device and
// another holder of its ledger see it taken while held, and free again
// after, and the host memory it allocates is only the busy pass's.
func TestHoldSim(t *testing.T) {
	const capacity = 1 << 30
	for _, busy := range []bool{false, true} {
		ledger := device.OpenLedger(filepath.Join(t.TempDir(), "ledger"))
		sim := device.NewSim(capacity, ledger)
		bytes := BlocksBytes(2)
		stopAt := Holding
		if busy {
			stopAt = BusyPass
		}
		kinds := hold(t, sim, bytes, busy, stopAt, func(e Event) {
			if e.Bytes != bytes {
				t.Errorf("busy %v: holding %d bytes, want %d", busy, e.Bytes, bytes)
			}
			if free, _, err := sim.MemInfo(); err != nil || free != capacity-bytes {
				t.Errorf("busy %v: %d bytes free while holding, %v; want %d", busy, free, err, capacity-bytes)
			}
			if others, err := ledger.Others(); err != nil || others != bytes {
				t.Errorf("busy %v: the ledger shows %d bytes taken, %v; want %d", busy, others, err, bytes)
			}
		})
		want := []EventKind{Holding, Released}
		if busy {
			want = []EventKind{Holding, BusyPass, Released}
		}
		if !slices.Equal(kinds, want) {
			t.Errorf("busy %v: events %v, want %v", busy, kinds, want)
		}
		st := sim.Stats()
		if st.AllocatedBytes != 0 || st.PeakBytes != bytes {
			t.Errorf("busy %v: after Hold %d bytes held, peak %d; want 0, %d", busy, st.AllocatedBytes, st.PeakBytes, bytes)
		}
		if want := int64(0); busy {
			want = 4 * BusyBatch * LayerDims
			if st.UploadBytes != want {
				t.Errorf("busy %v: uploaded %d bytes, want the busy input's %d", busy, st.UploadBytes, want)
			}
		}
		if others, err := ledger.Others(); err != nil || others != 0 {
			t.Errorf("busy %v: after Hold the ledger shows %d bytes, %v", busy, others, err)
		}
	}
}

// TestHoldHost allocates for real on a device that cannot reserve.
func TestHoldHost(t *testing.T) {
	for _, tt := range []struct {
		bytes int64
		busy  bool
		held  int64
	}{
		{2*LayerBytes + 10, false, 2*LayerBytes + 12}, // the rest rounds up to whole float32s
		{BusyMinBytes + LayerBytes, true, BusyMinBytes + LayerBytes},
	} {
		host := device.NewHost()
		stopAt := Holding
		if tt.busy {
			stopAt = BusyPass
		}
		hold(t, host, tt.bytes, tt.busy, stopAt, func(e Event) {
			if e.Bytes != tt.held || host.Stats().AllocatedBytes != tt.held {
				t.Errorf("%d bytes: Holding reports %d, the host holds %d; want %d", tt.bytes, e.Bytes, host.Stats().AllocatedBytes, tt.held)
			}
		})
		if got := host.Stats().AllocatedBytes; got != 0 {
			t.Errorf("%d bytes: %d still held after Hold", tt.bytes, got)
		}
	}
}

// TestForward checks the busy pass's arithmetic on one known layer, W =
// scale·I and bias b, on the all-ones input: every output is
// LeakyReLU(scale + b).
func TestForward(t *testing.T) {
	slope := float32(0.01)
	for _, tt := range []struct {
		scale, bias, want float32
	}{
		{0.5, 1, 1.5},
		{0.5, -2, slope * -1.5},
	} {
		host := device.NewHost()
		h := &holding{dev: host}
		if err := h.take(context.Background(), BusyMinBytes, true); err != nil {
			t.Fatal(err)
		}
		if len(h.layers) != 1 || h.passes != 1 {
			t.Fatalf("%d layers, %d passes; want 1, 1", len(h.layers), h.passes)
		}
		w := make([]float32, LayerDims*LayerDims)
		for i := range LayerDims {
			w[i*LayerDims+i] = tt.scale
		}
		b := slices.Repeat([]float32{tt.bias}, LayerDims)
		if err := errors.Join(host.Upload(h.layers[0][0], w), host.Upload(h.layers[0][1], b)); err != nil {
			t.Fatal(err)
		}
		h.forward()
		// Exact: each output's dot product has one nonzero term, 1·scale;
		// scale + bias is exact in float32, and the slope product is the
		// same single rounding as want's.
		for i, v := range device.Floats(h.y) {
			if v != tt.want {
				t.Fatalf("scale %g, bias %g: output %d = %g, want %g", tt.scale, tt.bias, i, v, tt.want)
			}
		}
		h.release()
	}
}

// limited is a host device that claims plenty of free memory but fails
// allocations beyond limit bytes, as when another process takes memory
// between Hold's check and its allocations.
type limited struct {
	*device.Host
	limit int64
}

func (d limited) MemInfo() (free, total int64, err error) { return 1 << 40, 1 << 40, nil }

func (d limited) Alloc(n int) (device.Buffer, error) {
	held := d.Stats().AllocatedBytes
	if held+4*int64(n) > d.limit {
		return nil, &device.OutOfMemoryError{Device: "limited", Requested: 4 * int64(n), Free: d.limit - held, Total: 1 << 40}
	}
	return d.Host.Alloc(n)
}

func TestHoldOutOfMemory(t *testing.T) {
	sim := device.NewSim(100<<20, nil)
	lim := limited{device.NewHost(), 3 * LayerBytes / 2}
	for _, tt := range []struct {
		name  string
		dev   device.Device
		bytes int64
		want  device.OutOfMemoryError
	}{
		{"sim", sim, BlocksBytes(1), device.OutOfMemoryError{Device: "sim:100MiB", Requested: BlocksBytes(1), Free: 100 << 20, Total: 100 << 20}},
		{"memory taken after the check", lim, 3 * LayerBytes, device.OutOfMemoryError{Device: "limited", Requested: 3 * LayerBytes, Free: 3 * LayerBytes / 2, Total: 1 << 40}},
	} {
		err := Hold(context.Background(), tt.dev, tt.bytes, false, func(e Event) { t.Errorf("%s: event %v", tt.name, e) })
		var oom *device.OutOfMemoryError
		if !errors.As(err, &oom) || !reflect.DeepEqual(*oom, tt.want) {
			t.Errorf("%s: Hold(%d) = %v, want %+v", tt.name, tt.bytes, err, tt.want)
		}
		if held := tt.dev.Stats().AllocatedBytes; held != 0 {
			t.Errorf("%s: %d bytes held after the failure", tt.name, held)
		}
	}
}

func TestHoldBadInput(t *testing.T) {
	sim := device.NewSim(1<<30, nil)
	for _, tt := range []struct {
		bytes int64
		busy  bool
	}{
		{-1, false},
		{BusyMinBytes - 1, true},
	} {
		if err := Hold(context.Background(), sim, tt.bytes, tt.busy, nil); err == nil {
			t.Errorf("Hold(%d, busy %v): no error", tt.bytes, tt.busy)
		}
	}
}

// recordingHost is the host device that keeps every buffer it allocates.
type recordingHost struct {
	*device.Host
	buffers []device.Buffer
}

func (r *recordingHost) Alloc(n int) (device.Buffer, error) {
	b, err := r.Host.Alloc(n)
	if err == nil {
		r.buffers = append(r.buffers, b)
	}
	return b, err
}

// TestHoldHostWritesEveryPage checks that memory held on the host is
// written, not only mapped: a fresh Go slice is backed by zero pages that
// the kernel supplies on first write, so holding it unwritten takes no
// memory at all. Every 4 KiB page of every buffer held must be non-zero.
func TestHoldHostWritesEveryPage(t *testing.T) {
	const pageFloats = 4096 / 4
	dev := &recordingHost{Host: device.NewHost()}
	hold(t, dev, LayerBytes+3*pageFloats*4, false, Holding, func(Event) {
		for i, b := range dev.buffers {
			data := device.Floats(b)
			for j := 0; j < len(data); j += pageFloats {
				if data[j] == 0 {
					t.Fatalf("buffer %d of %d elements: element %d (page %d) was never written", i, len(data), j, j/pageFloats)
				}
			}
		}
	})
}
