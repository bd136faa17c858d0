package device

import (
	"context"
	"fmt"
	"time"
)

// Info describes a device and its measured speeds. Rates are in
// bytes per second and FLOP per second; 0 means not measured.
type Info struct {
	Name       string
	Capability string // compute capability, "" when not a GPU
	Free       int64
	Total      int64
	// Copies between host and device memory: from page-locked (pinned)
	// host memory, and from ordinary Go memory (pageable), as Upload and
	// Download do. Host and simulated devices copy within host memory: their
	// pageable figures are memcpy rates and they have no pinned path.
	UploadPinned, DownloadPinned     float64
	UploadPageable, DownloadPageable float64
	GemmSize                         int     // n of the n×n×n SGEMM timed
	GemmFLOPS                        float64 // its speed
	// Bandwidth is the device memory's: bytes read and written per second
	// by the element-wise Add kernel on buffers of the copies' size.
	Bandwidth float64
}

// PinnedCopier is a device with a page-locked host staging path, whose raw
// copy rates it can measure (the CUDA device; Caps.Pinned).
type PinnedCopier interface {
	PinnedCopyRates(bytes int) (up, down float64, err error)
}

// copyBytes is the size of the buffer Measure times copies with.
const copyBytes = 64 << 20

// Measure reads a device's memory and times its copies of 64 MiB (best of
// three) and an n×n×n SGEMM (best of three after a warm-up).
func Measure(dev Device, n int) (Info, error) {
	return MeasureContext(context.Background(), dev, n)
}

// MeasureContext is Measure stopping when ctx is done: between its
// timings (each a fraction of a second; the first copies, which fault the
// buffers in, the longest), it returns ctx's error.
func MeasureContext(ctx context.Context, dev Device, n int) (Info, error) {
	return measure(ctx, dev, n, copyBytes)
}

// measure is MeasureContext with copies of the given size in bytes.
func measure(ctx context.Context, dev Device, n, copySize int) (Info, error) {
	caps := dev.Caps()
	info := Info{Name: dev.Name(), GemmSize: n, Capability: caps.ComputeCapability}
	var err error
	if info.Free, info.Total, err = dev.MemInfo(); err != nil {
		return info, fmt.Errorf("reading free memory: %w", err)
	}
	steps := []func() error{
		func() error {
			if caps.Pinned == nil {
				return nil
			}
			if info.UploadPinned, info.DownloadPinned, err = caps.Pinned.PinnedCopyRates(copySize); err != nil {
				return fmt.Errorf("measuring pinned copies: %w", err)
			}
			return nil
		},
		func() (err error) {
			info.UploadPageable, info.DownloadPageable, err = pageableRates(dev, copySize)
			return err
		},
		func() (err error) { info.GemmFLOPS, err = gemmRate(dev, n); return err },
		func() (err error) { info.Bandwidth, err = bandwidth(dev, copySize); return err },
	}
	for _, step := range steps {
		if err := ctx.Err(); err != nil {
			return info, fmt.Errorf("measuring %s: %w", dev.Name(), err)
		}
		if err := step(); err != nil {
			return info, err
		}
	}
	return info, nil
}

// bandwidth times the Add kernel on three buffers of bytes each: it reads
// two and writes one, so a call moves three times bytes through device
// memory.
func bandwidth(dev Device, bytes int) (float64, error) {
	t, err := timeKernel(dev, bytes/4, func(k Kernels, bufs [3]Buffer) { k.Add(bufs[2], bufs[0], bufs[1]) })
	if err != nil {
		return 0, fmt.Errorf("measuring memory bandwidth: %w", err)
	}
	return 3 * float64(bytes) / t.Seconds(), nil
}

// timeKernel allocates three buffers of n floats, launches the kernel
// once to warm up and then times it (best), each launch waited for by
// downloading one float of the third buffer.
func timeKernel(dev Device, n int, launch func(k Kernels, bufs [3]Buffer)) (time.Duration, error) {
	var bufs [3]Buffer
	for i := range bufs {
		b, err := dev.Alloc(n)
		if err != nil {
			return 0, err
		}
		defer dev.Free(b)
		bufs[i] = b
	}
	k := dev.Kernels()
	one := make([]float32, 1)
	run := func() error {
		launch(k, bufs)
		return dev.Download(one, dev.View(bufs[2], 0, 1)) // waits for the kernel
	}
	if err := run(); err != nil {
		return 0, err
	}
	return Best(run)
}

// Best returns the shortest of three runs of f: how Measure, and gpuz
// calibrate's samples (package calibration), time a run.
func Best(f func() error) (time.Duration, error) {
	var fastest time.Duration
	for i := range 3 {
		start := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		if d := time.Since(start); i == 0 || d < fastest {
			fastest = d
		}
	}
	return fastest, nil
}

// pageableRates times copies of bytes between Go memory and dev, each way.
func pageableRates(dev Device, bytes int) (up, down float64, err error) {
	host := make([]float32, bytes/4)
	b, err := dev.Alloc(len(host))
	if err != nil {
		return 0, 0, fmt.Errorf("measuring copies: %w", err)
	}
	defer dev.Free(b)
	tUp, err := Best(func() error {
		if err := dev.Upload(b, host); err != nil {
			return err
		}
		// An upload may return before its copy ends: a one-element
		// download waits for it.
		return dev.Download(host[:1], dev.View(b, 0, 1))
	})
	if err != nil {
		return 0, 0, fmt.Errorf("measuring uploads: %w", err)
	}
	tDown, err := Best(func() error { return dev.Download(host, b) })
	if err != nil {
		return 0, 0, fmt.Errorf("measuring downloads: %w", err)
	}
	return float64(bytes) / tUp.Seconds(), float64(bytes) / tDown.Seconds(), nil
}

// gemmRate times an n×n×n SGEMM on dev in FLOP per second.
func gemmRate(dev Device, n int) (float64, error) {
	t, err := timeKernel(dev, n*n, func(k Kernels, bufs [3]Buffer) { k.Gemm(false, false, n, n, n, bufs[0], bufs[1], bufs[2]) })
	if err != nil {
		return 0, fmt.Errorf("measuring GEMM: %w", err)
	}
	return 2 * float64(n) * float64(n) * float64(n) / t.Seconds(), nil
}
