// Package bench runs the benchmark matrix: one workload, trained or
// evaluated, in each requested mode, epoch by epoch, with timing, memory
// accounting and the handling of modes that cannot run. It returns results
// and reports progress through a callback; it prints nothing.
package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"gorgonia.org/gorgonia"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/kernels"
	"gpuz/internal/models"
)

// Workload is a model the runner can build: its graph and its data.
type Workload interface {
	Build() (*models.Model, error)
	Data(seed uint64) models.Data
}

// Options configures a run.
type Options struct {
	ModelName string
	Scale     string
	Workload  Workload
	Task      Task
	Modes     []Mode
	Samples   int
	Batch     int
	Epochs    int // total epochs, warm-up included
	Warmup    int // leading epochs reported apart
	Optimizer kernels.Adam
	ClipNorm  float64
	Seed      uint64
	Threads   int
	// Progress, when set, is called as the run advances.
	Progress func(Event)
}

// Event is a step of a run's progress: the run starting (Header set), a
// mode starting (Epoch nil) or an epoch done.
type Event struct {
	Header *Header
	Mode   Mode
	Device string
	Epoch  *Epoch
	Warmup bool
}

// Run measures every requested mode in turn and returns what each did. A
// mode that cannot run or fails gets a status and the other modes still
// run. When ctx is cancelled the run stops after the current batch: the
// epochs completed are kept, the mode is marked interrupted, and the modes
// not started are skipped.
func Run(ctx context.Context, opts Options) (Result, error) {
	kernels.SetThreads(opts.Threads)
	probe, err := opts.Workload.Build()
	if err != nil {
		return Result{}, err
	}
	data := opts.Workload.Data(opts.Seed)
	res := Result{Header: Header{
		Model:      opts.ModelName,
		Task:       opts.Task,
		Scale:      opts.Scale,
		DataBytes:  4 * int64(len(data.Values)),
		Params:     probe.ParamCount(),
		ParamBytes: 4 * probe.ParamCount(),
		Batch:      opts.Batch,
		Samples:    opts.Samples,
		BLAS:       kernels.BLASName(),
		Threads:    kernels.Threads(),
	}}
	if opts.Progress != nil {
		opts.Progress(Event{Header: &res.Header})
	}
	for _, mode := range opts.Modes {
		var r ModeResult
		if ctx.Err() != nil {
			r = ModeResult{Mode: mode, Warmup: opts.Warmup, Status: Status{Kind: StatusSkipped, Reason: "run interrupted"}}
		} else {
			r = runMode(ctx, opts, mode, data)
		}
		res.Modes = append(res.Modes, r)
	}
	res.PeakRSSBytes = peakRSS()
	return res, nil
}

// runMode measures one mode.
func runMode(ctx context.Context, opts Options, mode Mode, data models.Data) ModeResult {
	r := ModeResult{Mode: mode, Warmup: opts.Warmup}
	dev, status := deviceFor(mode)
	if dev == nil {
		r.Status = status
		return r
	}
	r.Device = dev.Name()
	if opts.Progress != nil {
		opts.Progress(Event{Mode: mode, Device: r.Device})
	}
	defer releaseHostMemory()

	model, err := opts.Workload.Build()
	if err != nil {
		r.Status = Status{Kind: StatusFailed, Reason: err.Error()}
		return r
	}
	output := model.OutputMean
	if opts.Task == TaskTrain {
		output = model.Loss
	}
	plan, err := engine.Compile(engine.Spec{
		Inputs: []*gorgonia.Node{model.Input, model.Target}, Blocks: model.Blocks, Output: output,
		Train: opts.Task == TaskTrain, Optimizer: opts.Optimizer, ClipNorm: opts.ClipNorm,
	})
	if err != nil {
		r.Status = Status{Kind: StatusFailed, Reason: err.Error()}
		return r
	}
	need := plan.Bytes().Total()
	if info, err := device.ReadMeminfo(); err == nil && need > info.Available {
		r.Status = Status{Kind: StatusSkipped, Reason: fmt.Sprintf("needs %d bytes, the host has %d available", need, info.Available)}
		return r
	}
	prog, err := plan.Load(dev, engine.Placement{})
	if err != nil {
		r.Status = errorStatus(err)
		return r
	}
	defer prog.Close()
	if err := model.InitParams(opts.Seed, prog.SetInput); err != nil {
		r.Status = errorStatus(err)
		return r
	}

	batches := opts.Samples / opts.Batch
	for e := range opts.Epochs {
		start := time.Now()
		sum := 0.0
		for i := range batches {
			if ctx.Err() != nil {
				r.Status = Status{Kind: StatusInterrupted, Reason: fmt.Sprintf("after %d of %d epochs", len(r.Epochs), opts.Epochs)}
				r.PeakDeviceBytes = dev.Stats().PeakBytes
				return r
			}
			batch := data.Batch(i, opts.Batch)
			if err := prog.SetInput(model.Input, batch); err != nil {
				r.Status = errorStatus(err)
				return r
			}
			if err := prog.SetInput(model.Target, batch); err != nil {
				r.Status = errorStatus(err)
				return r
			}
			v, err := prog.Run()
			if err != nil {
				r.Status = errorStatus(err)
				return r
			}
			sum += float64(v)
		}
		value := sum // eval: the sum over batches of the output's mean
		if opts.Task == TaskTrain {
			value = sum / float64(batches)
		}
		epoch := Epoch{Index: e, Duration: time.Since(start), Value: value}
		r.Epochs = append(r.Epochs, epoch)
		if opts.Progress != nil {
			opts.Progress(Event{Mode: mode, Device: r.Device, Epoch: &epoch, Warmup: e < opts.Warmup})
		}
	}
	r.PeakDeviceBytes = dev.Stats().PeakBytes
	r.Status = Status{Kind: StatusOK}
	return r
}

// deviceFor returns the device a mode runs on, or nil and the reason it
// cannot run in this build.
func deviceFor(mode Mode) (device.Device, Status) {
	switch mode {
	case ModeCPU:
		return device.NewHost(), Status{}
	case ModeCUDA, ModeCache:
		return nil, Status{Kind: StatusUnavailable, Reason: "no GPU device: this build has no CUDA support and no simulated device yet"}
	}
	return nil, Status{Kind: StatusFailed, Reason: fmt.Sprintf("unknown mode %q", mode)}
}

// errorStatus classifies an error that stopped a mode.
func errorStatus(err error) Status {
	var oom *device.OutOfMemoryError
	if errors.As(err, &oom) {
		return Status{Kind: StatusOOM, Reason: fmt.Sprintf("needed %d more bytes, %d free", oom.Requested, oom.Free)}
	}
	return Status{Kind: StatusFailed, Reason: err.Error()}
}

// releaseHostMemory returns a finished mode's host memory to the system
// before the next mode allocates its own.
func releaseHostMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// peakRSS returns the process's peak resident set size in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // Linux reports kilobytes
}
