// Package calibration times short runs of a device's work as the runs do
// it, for fitting the performance model to the device (perfmodel.Fit,
// gpuz calibrate): each op class the workloads use, launched through the
// op's own Launch as the engine launches it (so that a sample pays what a
// run pays per kernel: the op's argument checks and its call into the
// device's kernels, not the kernel alone), at shapes like the workloads'
// scaled down, and copies each way between ordinary memory and the
// device.
package calibration

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/perfmodel"
)

// launcher is an op of package ops as the engine runs it: Launch computes
// it with a device's kernels, Cost is one launch's work.
type launcher interface {
	gorgonia.Op
	Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error
	Cost(shapes []tensor.Shape) device.Cost
}

// Samples times every op case of Cases and copies of CopySizes each way on
// dev, with threads host threads for the BLAS and the element-wise
// kernels (hostmath.SetThreads, process-wide: the held-out runs' count).
// Each sample repeats its launch or copy until one run takes about target
// and keeps the fastest of three runs (device.Best), each ended by waiting for the device;
// a kernel sample counts its op as the engine's Schedule.Work does (the
// op's name without parameters, one launch, the op's Cost). When ctx is
// done it stops before the next sample (each takes a few times target)
// and returns ctx's error.
func Samples(ctx context.Context, dev device.Device, target time.Duration, threads int) ([]perfmodel.Sample, error) {
	hostmath.SetThreads(threads)
	stopped := func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("timing the ops and copies: %w", err)
		}
		return nil
	}
	var samples []perfmodel.Sample
	for _, c := range Cases() {
		if err := stopped(); err != nil {
			return nil, err
		}
		s, err := timeOp(dev, c, target)
		if err != nil {
			return nil, err
		}
		samples = append(samples, s)
	}
	for _, n := range CopySizes {
		if err := stopped(); err != nil {
			return nil, err
		}
		copies, err := timeCopies(dev, n, target)
		if err != nil {
			return nil, err
		}
		samples = append(samples, copies...)
	}
	return samples, nil
}

// opName is an op's name without its parameters, as the engine's
// Schedule.Work names its kernels.
func opName(op gorgonia.Op) string {
	name, _, _ := strings.Cut(op.String(), "{")
	return name
}

// timeOp allocates the case's arguments (filled with small values) and
// output, launches once to warm up and to size the repetitions, and
// returns the sample of the best of three runs of reps launches, each
// waited for by downloading one float of the output.
func timeOp(dev device.Device, c Case, target time.Duration) (perfmodel.Sample, error) {
	op, err := c.launcher()
	if err != nil {
		return perfmodel.Sample{}, err
	}
	name := c.String()
	out, err := op.InferShape(dimSizers(c.Shapes)...)
	if err != nil {
		return perfmodel.Sample{}, fmt.Errorf("calibrating %s: %w", name, err)
	}
	args := make([]device.Buffer, len(c.Shapes))
	for i, s := range c.Shapes {
		if args[i], err = filled(dev, s.TotalSize()); err != nil {
			return perfmodel.Sample{}, fmt.Errorf("calibrating %s: %w", name, err)
		}
		defer dev.Free(args[i])
	}
	y, err := dev.Alloc(max(out.TotalSize(), 1))
	if err != nil {
		return perfmodel.Sample{}, fmt.Errorf("calibrating %s: %w", name, err)
	}
	defer dev.Free(y)
	kernels, one, last := dev.Kernels(), make([]float32, 1), dev.View(y, 0, 1)
	run := func(reps int64) func() error {
		return func() error {
			for range reps {
				if err := op.Launch(kernels, y, args, c.Shapes); err != nil {
					return err
				}
			}
			return dev.Download(one, last)
		}
	}
	t, err := device.Best(run(1))
	if err != nil {
		return perfmodel.Sample{}, fmt.Errorf("calibrating %s: %w", name, err)
	}
	reps := repsFor(t, target)
	if t, err = device.Best(run(reps)); err != nil {
		return perfmodel.Sample{}, fmt.Errorf("calibrating %s: %w", name, err)
	}
	cost := op.Cost(c.Shapes)
	k := perfmodel.Kernel{Name: opName(op), Launches: reps, FLOPs: reps * cost.FLOPs, Bytes: reps * cost.Bytes()}
	return perfmodel.Sample{Name: fmt.Sprintf("%s ×%d", name, reps), Kernels: []perfmodel.Kernel{k}, Time: t}, nil
}

// dimSizers converts shapes for gorgonia's InferShape.
func dimSizers(shapes []tensor.Shape) []gorgonia.DimSizer {
	out := make([]gorgonia.DimSizer, len(shapes))
	for i, s := range shapes {
		out[i] = s
	}
	return out
}

// filled returns a buffer of n floats on dev holding small values of both
// signs (zeros could take a kernel's fast path that real data does not).
func filled(dev device.Device, n int) (device.Buffer, error) {
	b, err := dev.Alloc(n)
	if err != nil {
		return nil, err
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%13-6) / 16
	}
	if err := dev.Upload(b, v); err != nil {
		dev.Free(b)
		return nil, err
	}
	return b, nil
}

// CopySizes are the element counts of the copies Samples times: from a
// few floats (the fixed cost of a copy) to buffers beyond the caches (the
// memory's rate).
var CopySizes = []int{16, 1 << 10, 1 << 14, 1 << 18, 1 << 22}

// timeCopies returns samples of uploads and of downloads of n floats
// between ordinary memory and dev, each the best of three runs of
// repetitions sized to target; an upload run is waited for by downloading
// one float.
func timeCopies(dev device.Device, n int, target time.Duration) ([]perfmodel.Sample, error) {
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
		t, err := device.Best(c.run(1))
		if err != nil {
			return nil, fmt.Errorf("calibrating %ss of %d floats: %w", c.name, n, err)
		}
		reps := repsFor(t, target)
		if t, err = device.Best(c.run(reps)); err != nil {
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

// maxReps bounds a sample's repetitions.
const maxReps = 1 << 20

// repsFor returns how many runs of a run that took one make about target.
func repsFor(one, target time.Duration) int64 {
	return int64(min(max(target/max(one, 1), 1), maxReps))
}
