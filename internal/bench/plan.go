package bench

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/models"
	"gpuz/internal/units"
)

// ModePlan is the memory one mode would need, computed from the compiled
// program before anything is allocated.
type ModePlan struct {
	Mode      Mode
	Device    string // "" when the mode has no device
	Placement engine.Placement
	Footprint engine.Footprint
	// DeviceFree and HostAvailable are the bytes free now on the device
	// and what this process can still allocate on the host: the least of
	// MemAvailable, its cgroup's limit and its rlimits
	// (device.ReadHostLimit).
	DeviceFree, HostAvailable int64
	// HostNeed is the host memory the mode needs: the data set, the
	// footprint's host bytes, plus its device bytes where the device's
	// memory is host memory (the host itself, a simulated GPU).
	HostNeed int64
	// FitsDevice and FitsHost say whether the footprint fits them.
	FitsDevice, FitsHost bool
	// Copies is one steady-state epoch's host↔device copies under the
	// placement, counted without running (engine.Schedule.Copies); zero
	// for a mode that was not planned.
	Copies engine.Copies
	// Prediction is one epoch's prediction on the mode's profile, as Run
	// makes it (ModeResult.Prediction); nil without a profile.
	Prediction *Prediction
	Status     Status // unavailable modes say why; ok otherwise
}

// MemoryPlan is the memory plan of a workload for every mode and cache
// policy.
type MemoryPlan struct {
	Header    Header
	Bytes     engine.Bytes // with every block resident
	Gradients int64        // all parameters' gradients, part of Bytes.Arena while live
	Blocks    int
	MinWindow int
	// Work is one batch's device work (engine.Schedule.Work), the same in
	// every mode; an epoch's is Batches times it.
	Work    engine.Work
	Batches int
	Modes   []ModePlan
}

// PlanMemory computes the memory each requested mode needs, and for cache
// mode each policy (cache.Choices): the window and window-paged policies
// with opts.Cache's window, the auto policy sized from free memory, and,
// when training, the auto policy with the optimizer on the host. Nothing
// is allocated.
func PlanMemory(opts Options) (MemoryPlan, error) {
	threads := opts.applyThreads()
	model, plan, err := opts.compile()
	if err != nil {
		return MemoryPlan{}, err
	}
	// The header counts the data set's bytes without making it: a plan
	// allocates nothing.
	header := opts.header(model, models.Data{}, threads)
	header.DataBytes = opts.dataBytes()
	res := MemoryPlan{Header: header, Bytes: plan.Bytes(), Gradients: plan.GradientBytes(),
		Blocks: plan.Blocks(), MinWindow: plan.MinWindow(), Work: plan.Work(), Batches: opts.Samples / opts.Batch}
	host, err := device.ReadHostLimit()
	if err != nil {
		return MemoryPlan{}, fmt.Errorf("planning the host memory: %w", err)
	}
	for _, mode := range opts.Modes {
		placements := []engine.Placement{{}}
		if mode == ModeHybrid {
			placements = []engine.Placement{opts.hybridPlacement()}
		}
		if mode == ModeManaged {
			placements = []engine.Placement{opts.managedPlacement()}
		}
		if mode == ModeCache {
			placements = nil
			for _, c := range cache.Choices(opts.Cache.Window, opts.Task == TaskTrain) {
				placements = append(placements, cachePlacement(c))
			}
		}
		dev, _, status := opts.deviceFor(mode)
		for _, pl := range placements {
			mp := ModePlan{Mode: mode, Placement: pl, HostAvailable: host.Bytes, Status: status}
			if dev == nil {
				res.Modes = append(res.Modes, mp)
				continue
			}
			mp.Status = Status{Kind: StatusOK}
			mp.Device = dev.Name()
			if mp.DeviceFree, _, err = dev.MemInfo(); err != nil {
				_ = dev.Close()
				return MemoryPlan{}, fmt.Errorf("%s: %w", mode, err)
			}
			mp.Footprint = plan.Footprint(pl, mp.DeviceFree)
			mp.FitsDevice = mp.Footprint.Device <= mp.DeviceFree
			// A run makes the data set once, before any mode: each
			// mode's host need counts it here, where nothing is made yet.
			mp.HostNeed = header.DataBytes + hostNeed(dev, mp.Footprint)
			mp.FitsHost = mp.HostNeed <= host.Bytes
			// A placement that cannot load (a window of 0) has no copies to
			// count; the run reports it.
			if pl.Validate() != nil {
				res.Modes = append(res.Modes, mp)
				continue
			}
			if mp.Copies, err = plan.Copies(pl, mp.Footprint.Window, res.Batches, []*gorgonia.Node{model.Input, model.Target}); err != nil {
				_ = dev.Close()
				return MemoryPlan{}, fmt.Errorf("%s: %w", mode, err)
			}
			if p, ok := opts.profileFor(mode, dev); ok {
				pr := predictEpoch(res.Work, res.Batches, mp.Copies, pl, p)
				mp.Prediction = &pr
			}
			res.Modes = append(res.Modes, mp)
		}
		// Each mode's device is closed before the next is opened, so that
		// the next one's free memory does not count this one's context.
		if dev != nil {
			if err := dev.Close(); err != nil {
				return MemoryPlan{}, fmt.Errorf("%s: %w", mode, err)
			}
		}
	}
	return res, nil
}

// dataBytes returns the bytes of the workload's data set without making
// it, where the workload can say (every models.Config can); otherwise it
// makes the data to count it.
func (opts Options) dataBytes() int64 {
	if w, ok := opts.Workload.(interface{ DataLen() int }); ok {
		return 4 * int64(w.DataLen())
	}
	return 4 * int64(len(opts.Workload.Data(opts.Seed).Values))
}

// dataShortfall checks, before Run makes the data set, that it fits the
// host's limit. When it does not, it returns the run's result with every
// mode skipped for that reason, having reported the header, and true.
func (opts Options) dataShortfall(model *models.Model, threads threadCount) (Result, bool) {
	need := opts.dataBytes()
	lim, err := device.ReadHostLimit()
	if err != nil || need <= lim.Bytes {
		return Result{}, false
	}
	res := Result{Header: opts.header(model, models.Data{}, threads)}
	res.Header.DataBytes = need
	if opts.Progress != nil {
		opts.Progress(Event{Header: &res.Header})
	}
	reason := "the data set " + shortfall(need, lim)
	for _, mode := range opts.Modes {
		res.Modes = append(res.Modes, ModeResult{Mode: mode, Warmup: opts.Warmup, Status: Status{Kind: StatusSkipped, Reason: reason}})
		if opts.Progress != nil {
			end := res.Modes[len(res.Modes)-1].Status
			opts.Progress(Event{Mode: mode, End: &end})
		}
	}
	res.PeakRSSBytes = peakRSS()
	return res, true
}

// hostNeed is the host memory a footprint takes on a device: its host
// bytes, plus its device bytes where the device's memory is host memory.
func hostNeed(dev device.Device, fp engine.Footprint) int64 {
	need := fp.Host
	if sharesHostMemory(dev) {
		need += fp.Device
	}
	return need
}

// hostShortfall says why a mode's footprint cannot fit what the host
// still lets this process allocate (device.ReadHostLimit), or "" when it
// fits. The data set, made before any mode, is already counted in that
// limit.
func hostShortfall(dev device.Device, fp engine.Footprint) string {
	lim, err := device.ReadHostLimit()
	if err != nil {
		return ""
	}
	if need := hostNeed(dev, fp); need > lim.Bytes {
		return shortfall(need, lim)
	}
	return ""
}

// shortfall says that need bytes exceed a host limit: "needs N of host
// memory, M available", naming the limit when it is not MemAvailable.
func shortfall(need int64, lim device.HostLimit) string {
	s := fmt.Sprintf("needs %s of host memory, %s available", units.Bytes(need), units.Bytes(lim.Bytes))
	if lim.Binding != "MemAvailable" {
		s += " under " + lim.Binding
	}
	return s
}
