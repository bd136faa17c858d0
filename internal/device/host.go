package device

import (
	"fmt"

	"gpuz/internal/kernels"
)

// hostBuffer is a buffer in host memory.
type hostBuffer struct{ data []float32 }

func (b *hostBuffer) Len() int { return len(b.data) }

// Floats returns the host slice behind a buffer of the host or simulated
// device. It panics on a buffer of another device: mixing devices is a
// programming error.
func Floats(b Buffer) []float32 { return b.(*hostBuffer).data }

// Host is the CPU as a device: buffers are Go slices and the kernels are
// those of package kernels.
type Host struct{ hostMemory }

// NewHost returns the host device.
func NewHost() *Host { return &Host{hostMemory{name: "host"}} }

// Name is "host".
func (h *Host) Name() string { return "host" }

// Alloc returns a zeroed buffer of n elements in host memory.
func (h *Host) Alloc(n int) (Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("host: cannot allocate %d elements", n)
	}
	h.meter.Hold(4 * int64(n))
	return &hostBuffer{data: make([]float32, n)}, nil
}

// Free releases a buffer.
func (h *Host) Free(b Buffer) {
	hb := b.(*hostBuffer)
	h.meter.Hold(-4 * int64(len(hb.data)))
	hb.data = nil
}

// MemInfo reports the host memory available (MemAvailable) and installed
// (MemTotal).
func (h *Host) MemInfo() (free, total int64, err error) {
	info, err := ReadMeminfo()
	if err != nil {
		return 0, 0, fmt.Errorf("host: %w", err)
	}
	return info.Available, info.Total, nil
}

// HostKernels runs the kernels of package kernels on host buffers; the
// simulated device uses them too.
type HostKernels struct{}

// Gemm computes c = op(a)·op(b).
func (HostKernels) Gemm(transA, transB bool, m, n, k int, a, b, c Buffer) {
	kernels.Gemm(transA, transB, m, n, k, 1, Floats(a), Floats(b), 0, Floats(c))
}

// AddRowVector adds v to every row of m.
func (HostKernels) AddRowVector(m, v Buffer) { kernels.AddRowVector(Floats(m), Floats(v)) }

// SumRows sets dst to the sum of the rows of m.
func (HostKernels) SumRows(dst, m Buffer) { kernels.SumRows(Floats(dst), Floats(m)) }

// LeakyReLU sets dst to the activation of src.
func (HostKernels) LeakyReLU(dst, src Buffer, slope float32) {
	kernels.LeakyReLU(Floats(dst), Floats(src), slope)
}

// LeakyReLUGrad sets dst to the activation's gradient.
func (HostKernels) LeakyReLUGrad(dst, x, g Buffer, slope float32) {
	kernels.LeakyReLUGrad(Floats(dst), Floats(x), Floats(g), slope)
}

// Add sets dst = a + b.
func (HostKernels) Add(dst, a, b Buffer) { kernels.Add(Floats(dst), Floats(a), Floats(b)) }

// MeanSquaredError sets dst[0] to the loss.
func (HostKernels) MeanSquaredError(dst, pred, target Buffer) {
	Floats(dst)[0] = float32(kernels.MeanSquaredError(Floats(pred), Floats(target)))
}

// MeanSquaredErrorGrad sets dst to the loss gradient.
func (HostKernels) MeanSquaredErrorGrad(dst, pred, target, seed Buffer) {
	kernels.MeanSquaredErrorGrad(Floats(dst), Floats(pred), Floats(target), Floats(seed)[0])
}

// Mean sets dst[0] to the mean of x.
func (HostKernels) Mean(dst, x Buffer) {
	xs := Floats(x)
	Floats(dst)[0] = float32(kernels.Sum(xs) / float64(len(xs)))
}

// Fill sets dst to scale·s[0].
func (HostKernels) Fill(dst, s Buffer, scale float32) {
	d, v := Floats(dst), Floats(s)[0]*scale
	for i := range d {
		d[i] = v
	}
}

// SumSquares returns the sum of squares of x.
func (HostKernels) SumSquares(x Buffer) float64 { return kernels.SumSquares(Floats(x)) }

// AdamStep applies one Adam update.
func (HostKernels) AdamStep(opt kernels.Adam, p, g, m, v Buffer, gradScale float64, step int) {
	kernels.AdamStep(opt, Floats(p), Floats(g), Floats(m), Floats(v), gradScale, step)
}
