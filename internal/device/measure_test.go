package device

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// gpuLike is a host that states a compute capability and pinned copy
// rates in its Caps, as the CUDA device does.
type gpuLike struct {
	*Host
	pinnedErr error
}

func (g gpuLike) Caps() Caps { return Caps{ComputeCapability: "8.6", Pinned: g} }

func (g gpuLike) PinnedCopyRates(bytes int) (up, down float64, err error) {
	return 25e9, 26e9, g.pinnedErr
}

// TestMeasure measures the host, the simulated device and a device with
// the CUDA device's optional methods, with small copies and GEMM.
func TestMeasure(t *testing.T) {
	const n, bytes = 8, 4096
	for _, tt := range []struct {
		dev            Device
		capability     string
		pinned         bool
		wantFreeTotals bool // the device reports its own memory
	}{
		{dev: NewHost()},
		{dev: NewSim(1<<20, nil), wantFreeTotals: true},
		{dev: gpuLike{Host: NewHost()}, capability: "8.6", pinned: true},
	} {
		info, err := measure(context.Background(), tt.dev, n, bytes)
		if err != nil {
			t.Fatalf("%s: %v", tt.dev.Name(), err)
		}
		if info.Name != tt.dev.Name() || info.GemmSize != n || info.Capability != tt.capability {
			t.Errorf("%s: name %q, GEMM size %d, capability %q; want %q, %d, %q",
				tt.dev.Name(), info.Name, info.GemmSize, info.Capability, tt.dev.Name(), n, tt.capability)
		}
		if info.Total <= 0 || info.Free < 0 || info.Free > info.Total {
			t.Errorf("%s: free %d of total %d", tt.dev.Name(), info.Free, info.Total)
		}
		if tt.wantFreeTotals && (info.Total != 1<<20 || info.Free != 1<<20) {
			t.Errorf("%s: free %d of total %d after measuring, want all of 1MiB free", tt.dev.Name(), info.Free, info.Total)
		}
		if info.UploadPageable <= 0 || info.DownloadPageable <= 0 || info.GemmFLOPS <= 0 || info.Bandwidth <= 0 {
			t.Errorf("%s: pageable %g up, %g down, GEMM %g FLOP/s; want all positive",
				tt.dev.Name(), info.UploadPageable, info.DownloadPageable, info.GemmFLOPS)
		}
		if got := info.UploadPinned != 0 || info.DownloadPinned != 0; got != tt.pinned {
			t.Errorf("%s: pinned rates %g up, %g down; want them measured: %v", tt.dev.Name(), info.UploadPinned, info.DownloadPinned, tt.pinned)
		}
	}
}

// TestMeasureErrors checks that Measure reports what it could not measure.
func TestMeasureErrors(t *testing.T) {
	broken := errors.New("broken")
	for _, tt := range []struct {
		dev  Device
		n    int
		want string
	}{
		{gpuLike{Host: NewHost(), pinnedErr: broken}, 8, "measuring pinned copies: broken"},
		{NewSim(1024, nil), 8, "measuring copies"}, // 4096 bytes do not fit
		{NewSim(8192, nil), 32, "measuring GEMM"},  // the copies fit, the third 32×32 matrix does not
	} {
		_, err := measure(context.Background(), tt.dev, tt.n, 4096)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one with %q", tt.dev.Name(), err, tt.want)
		}
	}
}

// TestMeasureContextStops checks that a measurement whose context is done
// times nothing and returns the context's error: gpuz calibrate's first
// measurement (a second, faulting its 64 MiB buffers in) kept a signal
// waiting (issue 36 item 16).
func TestMeasureContextStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	info, err := MeasureContext(ctx, NewSim(256<<20, nil), 64)
	if !errors.Is(err, context.Canceled) || info.UploadPageable != 0 || info.GemmFLOPS != 0 || info.Bandwidth != 0 {
		t.Errorf("MeasureContext with its context done: %+v, %v; want nothing timed and context.Canceled", info, err)
	}
}
