package bench

import (
	"fmt"

	"gpuz/internal/device"
	"gpuz/internal/engine"
)

// ModePlan is the memory one mode would need, computed from the compiled
// program before anything is allocated.
type ModePlan struct {
	Mode      Mode
	Device    string // "" when the mode has no device
	Placement engine.Placement
	Footprint engine.Footprint
	// DeviceFree and HostAvailable are the bytes free now on the device
	// and in host memory.
	DeviceFree, HostAvailable int64
	// HostNeed is the host memory the mode needs: the footprint's host
	// bytes, plus its device bytes where the device's memory is host
	// memory (the host itself, a simulated GPU).
	HostNeed int64
	// FitsDevice and FitsHost say whether the footprint fits them.
	FitsDevice, FitsHost bool
	Status               Status // unavailable modes say why; ok otherwise
}

// MemoryPlan is the memory plan of a workload for every mode and cache
// policy.
type MemoryPlan struct {
	Header    Header
	Bytes     engine.Bytes // with every block resident
	Gradients int64        // all parameters' gradients, part of Bytes.Arena while live
	Blocks    int
	MinWindow int
	Modes     []ModePlan
}

// PlanMemory computes the memory each requested mode needs, and for cache mode
// each policy: the window policy with opts.Cache's window, the auto policy
// sized from free memory, and the auto policy with the optimizer on the
// host. Nothing is allocated.
func PlanMemory(opts Options) (MemoryPlan, error) {
	opts.applyThreads()
	model, plan, err := opts.compile()
	if err != nil {
		return MemoryPlan{}, err
	}
	res := MemoryPlan{Header: opts.header(model, opts.Workload.Data(opts.Seed)), Bytes: plan.Bytes(), Gradients: plan.GradientBytes(),
		Blocks: plan.Blocks(), MinWindow: plan.MinWindow()}
	host, err := device.ReadMeminfo()
	if err != nil {
		return MemoryPlan{}, err
	}
	for _, mode := range opts.Modes {
		placements := []engine.Placement{{}}
		if mode == ModeCache {
			window := opts.Cache.placement()
			window.Policy, window.OptimizerOnHost = engine.PolicyWindow, false
			placements = []engine.Placement{
				window,
				{Paged: true, Policy: engine.PolicyAuto},
			}
			if opts.Task == TaskTrain {
				placements = append(placements, engine.Placement{Paged: true, Policy: engine.PolicyAuto, OptimizerOnHost: true})
			}
		}
		dev, _, status := opts.deviceFor(mode)
		for _, pl := range placements {
			mp := ModePlan{Mode: mode, Placement: pl, HostAvailable: host.Available, Status: status}
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
			mp.HostNeed = mp.Footprint.Host
			if sharesHostMemory(dev) {
				mp.HostNeed += mp.Footprint.Device
			}
			mp.FitsHost = mp.HostNeed <= host.Available
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
