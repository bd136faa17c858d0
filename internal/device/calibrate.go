package device

import (
	"fmt"
	"time"

	"gpuz/internal/perfmodel"
)

// calibrationGemms are the products CalibrationSamples times, m×n×k: the
// tiny linear workload's (150 rows of 16), skinny ones like a batch through
// a wide layer, and squares up to where the rate levels off.
var calibrationGemms = [][3]int{{150, 16, 16}, {32, 32, 32}, {30, 512, 512}, {128, 128, 128}, {30, 2000, 2000}, {256, 256, 256}, {512, 512, 512}}

// calibrationSizes are the element counts of the element-wise kernels and
// the copies CalibrationSamples times: from a few floats (the fixed cost)
// to buffers beyond the caches (the memory's rate).
var calibrationSizes = []int{16, 1 << 10, 1 << 14, 1 << 18, 1 << 22}

// CalibrationSamples times short runs of each kernel class on dev, for
// fitting the model's factors (perfmodel.Fit): products (Gemm at
// calibrationGemms' shapes), element-wise kernels (Add and LeakyReLU at
// calibrationSizes) and copies each way (Upload and Download of the same
// sizes from ordinary memory). Each sample repeats its kernel or copy
// until one run takes about target, then keeps the best of three runs,
// each ended by waiting for the device; the kernels are counted as the
// ops count them (a GEMM 2mnk FLOPs and its three matrices; Add one FLOP
// and three floats an element, LeakyReLU one and two).
func CalibrationSamples(dev Device, target time.Duration) ([]perfmodel.Sample, error) {
	var samples []perfmodel.Sample
	for _, s := range calibrationGemms {
		m, n, k := s[0], s[1], s[2]
		kernel := perfmodel.Kernel{Name: "Gemm", Launches: 1, FLOPs: 2 * int64(m) * int64(n) * int64(k), Bytes: 4 * int64(m*k+k*n+m*n)}
		sample, err := timeSample(dev, fmt.Sprintf("Gemm %d×%d×%d", m, n, k), kernel, []int{m * k, k * n, m * n}, target,
			func(kn Kernels, b []Buffer) { kn.Gemm(false, true, m, n, k, b[0], b[1], b[2]) })
		if err != nil {
			return nil, err
		}
		samples = append(samples, sample)
	}
	for _, n := range calibrationSizes {
		add := perfmodel.Kernel{Name: "Add", Launches: 1, FLOPs: int64(n), Bytes: 12 * int64(n)}
		sample, err := timeSample(dev, fmt.Sprintf("Add %d", n), add, []int{n, n, n}, target,
			func(kn Kernels, b []Buffer) { kn.Add(b[2], b[0], b[1]) })
		if err != nil {
			return nil, err
		}
		relu := perfmodel.Kernel{Name: "LeakyReLU", Launches: 1, FLOPs: int64(n), Bytes: 8 * int64(n)}
		sample2, err := timeSample(dev, fmt.Sprintf("LeakyReLU %d", n), relu, []int{n, n}, target,
			func(kn Kernels, b []Buffer) { kn.LeakyReLU(b[1], b[0], 0.01) })
		if err != nil {
			return nil, err
		}
		samples = append(samples, sample, sample2)
	}
	for _, n := range calibrationSizes {
		copies, err := timeCopies(dev, n, target)
		if err != nil {
			return nil, err
		}
		samples = append(samples, copies...)
	}
	return samples, nil
}

// maxReps bounds a sample's repetitions.
const maxReps = 1 << 20

// repsFor returns how many runs of a run that took one make about target.
func repsFor(one, target time.Duration) int64 {
	return int64(min(max(target/max(one, 1), 1), maxReps))
}

// timeSample allocates buffers of the given lengths, launches once to
// warm up and to size the repetitions, and returns the sample of the best
// of three runs of reps launches, each waited for by downloading one float
// of the last buffer.
func timeSample(dev Device, name string, k perfmodel.Kernel, lengths []int, target time.Duration, launch func(Kernels, []Buffer)) (perfmodel.Sample, error) {
	bufs := make([]Buffer, len(lengths))
	for i, n := range lengths {
		b, err := dev.Alloc(n)
		if err != nil {
			return perfmodel.Sample{}, fmt.Errorf("calibrating %s: %w", name, err)
		}
		defer dev.Free(b)
		bufs[i] = b
	}
	kernels, one := dev.Kernels(), make([]float32, 1)
	last := dev.View(bufs[len(bufs)-1], 0, 1)
	run := func(reps int64) func() error {
		return func() error {
			for range reps {
				launch(kernels, bufs)
			}
			return dev.Download(one, last)
		}
	}
	t, err := best(run(1))
	if err != nil {
		return perfmodel.Sample{}, fmt.Errorf("calibrating %s: %w", name, err)
	}
	reps := repsFor(t, target)
	if t, err = best(run(reps)); err != nil {
		return perfmodel.Sample{}, fmt.Errorf("calibrating %s: %w", name, err)
	}
	k.Launches, k.FLOPs, k.Bytes = reps*k.Launches, reps*k.FLOPs, reps*k.Bytes
	return perfmodel.Sample{Name: fmt.Sprintf("%s ×%d", name, reps), Kernels: []perfmodel.Kernel{k}, Time: t}, nil
}

// timeCopies returns samples of uploads and of downloads of n floats
// between ordinary memory and dev, each the best of three runs of
// repetitions sized to target; an upload run is waited for by downloading
// one float.
func timeCopies(dev Device, n int, target time.Duration) ([]perfmodel.Sample, error) {
	host := make([]float32, n)
	b, err := dev.Alloc(n)
	if err != nil {
		return nil, fmt.Errorf("calibrating copies of %d floats: %w", n, err)
	}
	defer dev.Free(b)
	one := make([]float32, 1)
	up := func(reps int64) func() error {
		return func() error {
			for range reps {
				if err := dev.Upload(b, host); err != nil {
					return err
				}
			}
			return dev.Download(one, dev.View(b, 0, 1))
		}
	}
	down := func(reps int64) func() error {
		return func() error {
			for range reps {
				if err := dev.Download(host, b); err != nil {
					return err
				}
			}
			return nil
		}
	}
	bytes := 4 * int64(n)
	var samples []perfmodel.Sample
	for _, c := range []struct {
		name string
		run  func(int64) func() error
		up   bool
	}{{"upload", up, true}, {"download", down, false}} {
		t, err := best(c.run(1))
		if err != nil {
			return nil, fmt.Errorf("calibrating %ss of %d floats: %w", c.name, n, err)
		}
		reps := repsFor(t, target)
		if t, err = best(c.run(reps)); err != nil {
			return nil, fmt.Errorf("calibrating %ss of %d floats: %w", c.name, n, err)
		}
		copies := perfmodel.Copies{SyncBytes: reps * bytes, Count: reps, Pageable: true}
		if c.up {
			copies.H2DBytes = reps * bytes
		} else {
			copies.D2HBytes = reps * bytes
		}
		samples = append(samples, perfmodel.Sample{Name: fmt.Sprintf("%s %d B ×%d", c.name, bytes, reps), Copies: copies, Time: t})
	}
	return samples, nil
}
