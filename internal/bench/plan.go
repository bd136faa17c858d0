package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorgonia.org/gorgonia"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
	"gpuz/internal/models"
	"gpuz/internal/units"
)

// ModePlan is the memory one mode would need, computed from the compiled
// program before anything is allocated.
type ModePlan struct {
	Mode Mode
	// Recompute is the recompute setting of the schedule planned (one of
	// MemoryPlan.Schedules).
	Recompute levers.Recompute
	// Precision is the storage precision of the schedule planned: a
	// plan's Options.Precision, a Planner's Config.Precision.
	Precision levers.Precision
	Device    string // "" when the mode has no device
	Placement engine.Placement
	Footprint engine.Footprint
	// DeviceFree and HostAvailable are the bytes free now on the device,
	// less PlanOptions.TakeBytes (0 at least), and what this process can
	// still allocate on the host: the least of MemAvailable, its cgroup's
	// limit and its rlimits, plus the freed memory it keeps for reuse
	// (device.ReadHostLimit).
	DeviceFree, HostAvailable int64
	// DeviceTotal is the device's capacity.
	DeviceTotal int64
	// HostNeed is the host memory the mode needs: the data set, the
	// footprint's host bytes, plus its device bytes where the device's
	// memory is host memory (the host itself, a simulated GPU).
	HostNeed int64
	// FitsDevice and FitsHost say whether the footprint fits them.
	FitsDevice, FitsHost bool
	// Copies is one steady-state epoch's host↔device copies under the
	// placement, counted without running (engine.Schedule.Copies); zero
	// for a mode that was not planned and for the cpu mode, which copies
	// nothing between devices.
	Copies engine.Copies
	// Prediction is one epoch's prediction on the mode's profile, as Run
	// makes it (ModeResult.Prediction); nil without a profile.
	Prediction *Prediction
	// Timeline is the device memory at each step and update of one batch
	// under the placement (engine.Schedule.Timeline); nil for a mode that
	// was not planned and for a managed placement.
	Timeline []engine.StepMemory
	Status   Status // unavailable modes say why; ok otherwise
}

// SchedulePlan is what one compiled schedule holds and computes, the
// same in every mode.
type SchedulePlan struct {
	Recompute levers.Recompute
	Bytes     engine.Bytes // with every block resident
	Gradients int64        // all parameters' gradients, part of Bytes.Arena while live
	MinWindow int
	// Work is one batch's device work (engine.Schedule.Work): an epoch's
	// is MemoryPlan.Batches times it. Recompute's re-run forward steps
	// count in it as the steps they are.
	Work engine.Work
}

// MemoryPlan is the memory plan of a workload for every mode and cache
// policy, under each recompute setting planned.
type MemoryPlan struct {
	Header Header // its TakeBytes is PlanOptions.TakeBytes, its Recompute the settings planned, comma-separated
	Blocks int
	// Schedules are the schedules compiled, one per recompute setting
	// planned, in the order PlanOptions gives them.
	Schedules []SchedulePlan
	Batches   int
	// Modes are the rows: for each mode in turn, each placement (for the
	// cache mode each policy), each under every schedule in turn.
	Modes []ModePlan
}

// Schedule returns the schedule planned for recompute setting r ("" is
// none), false when none was.
func (p MemoryPlan) Schedule(r levers.Recompute) (SchedulePlan, bool) {
	for _, s := range p.Schedules {
		if s.Recompute.String() == r.String() {
			return s, true
		}
	}
	return SchedulePlan{}, false
}

// PlanOptions is what a plan compares beyond one run's options.
type PlanOptions struct {
	// Recomputes are the recompute settings planned, each compiled into
	// its own schedule and giving each mode and placement its own row;
	// nil plans Options.Recompute alone.
	Recomputes []levers.Recompute
	// TakeBytes is subtracted from each device's free memory, as the
	// memory a run's --take (or another program) would hold: the plan
	// itself holds nothing.
	TakeBytes int64
}

// PlanMemory computes the memory each requested mode needs, and for cache
// mode each policy (cache.Choices): the window and window-paged policies
// with opts.Cache's window, the auto policy sized from free memory, and,
// when training, the auto policy with the optimizer on the host; each
// under every recompute setting of po. Nothing is allocated, and nothing
// is held: po.TakeBytes only lowers the free memory planned with.
func PlanMemory(opts Options, po PlanOptions) (MemoryPlan, error) {
	threads := opts.applyThreads()
	recomputes := po.Recomputes
	if len(recomputes) == 0 {
		recomputes = []levers.Recompute{opts.Recompute}
	}
	recomputes = slices.Clone(recomputes)
	for i, r := range recomputes {
		recomputes[i] = r.Setting()
	}
	var (
		built     []*models.Model // each schedule's model: its inputs are the schedule's
		schedules []*engine.Schedule
		res       MemoryPlan
	)
	for _, r := range recomputes {
		o := opts
		o.Recompute = r
		m, sched, err := o.compile()
		if err != nil {
			return MemoryPlan{}, fmt.Errorf("recompute %s: %w", r, err)
		}
		built, schedules = append(built, m), append(schedules, sched)
		res.Schedules = append(res.Schedules, SchedulePlan{Recompute: r, Bytes: sched.Bytes(), Gradients: sched.GradientBytes(),
			MinWindow: sched.MinWindow(), Work: sched.Work()})
	}
	// The header counts the data set's bytes without making it: a plan
	// allocates nothing.
	res.Header = opts.header(built[0], models.Data{}, threads)
	res.Header.DataBytes = opts.dataBytes()
	res.Header.TakeBytes = po.TakeBytes
	names := make([]string, len(recomputes))
	for i, r := range recomputes {
		names[i] = r.String()
	}
	res.Header.Recompute = strings.Join(names, ",") // the settings planned
	res.Blocks, res.Batches = schedules[0].Blocks(), opts.Samples/opts.Batch
	host, err := opts.plannedHost()
	if err != nil {
		return MemoryPlan{}, fmt.Errorf("planning the host memory: %w", err)
	}
	res.Header.HostMemory, res.Header.HostMemorySource = host.Bytes, host.Binding
	for _, mode := range opts.Modes {
		placements := planPlacements(mode, opts.Config, opts.Task == TaskTrain)
		dev, _, status := opts.deviceFor(mode)
		for _, pl := range placements {
			for si, sched := range schedules {
				mp := ModePlan{Mode: mode, Recompute: recomputes[si], Precision: opts.Precision.Setting(), Placement: pl, HostAvailable: host.Bytes, Status: status}
				if dev != nil {
					mp, err = opts.planMode(mp, dev, sched, res, po.TakeBytes, opts.fed(built[si]))
				}
				if err != nil {
					_ = dev.Close()
					return MemoryPlan{}, fmt.Errorf("%s: %w", mode, err)
				}
				res.Modes = append(res.Modes, mp)
			}
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

// planMode fills mp, a mode on dev under its placement and recompute
// setting, from the schedule compiled for that setting: the footprint
// with take bytes of dev's free memory taken, the host need, the copies
// of an epoch of fed batches, the prediction and the timeline. Nothing is
// allocated.
func (opts Options) planMode(mp ModePlan, dev device.Device, sched *engine.Schedule, res MemoryPlan, take int64, fed []*gorgonia.Node) (ModePlan, error) {
	var err error
	mp.Status = Status{Kind: StatusOK}
	mp.Device = dev.Name()
	if mp.DeviceFree, mp.DeviceTotal, err = dev.MemInfo(); err != nil {
		return mp, err
	}
	if mp.Mode.OnHost() && opts.HostMemory > 0 { // the target host's memory is the cpu mode's device
		mp.DeviceFree, mp.DeviceTotal = opts.HostMemory, opts.HostMemory
	}
	mp.DeviceFree = max(mp.DeviceFree-take, 0)
	if err := opts.sizeMode(&mp, dev, sched, res.Header.DataBytes, res.Batches, fed, true); err != nil {
		return mp, err
	}
	if mp.Placement.Validate() == nil {
		mp.Timeline, err = sched.Timeline(mp.Placement, mp.Footprint.Window)
		if err != nil && !errors.Is(err, engine.ErrNoTimeline) {
			return mp, err
		}
	}
	return mp, nil
}

// sizeMode fills what mp needs on dev under its placement with
// mp.DeviceFree free: the footprint, the host need (dataBytes, the data
// set a run makes once before any mode, and the device's share where its
// memory is the host's) and whether each fits; and, where fed batches of
// an epoch (batches) are given, the copies of an epoch and the prediction
// on the mode's profile. A placement that cannot load (a window of 0, a
// managed region of which the free memory holds not one page) has no
// copies to count: the run reports it.
func (opts Options) sizeMode(mp *ModePlan, dev device.Device, sched *engine.Schedule, dataBytes int64, batches int, fed []*gorgonia.Node, predict bool) error {
	mp.Footprint = sched.Footprint(mp.Placement, mp.DeviceFree)
	mp.FitsDevice = mp.Footprint.Device <= mp.DeviceFree
	caps := dev.Caps()
	mp.HostNeed = dataBytes + opts.plannedHostNeed(caps, mp.Footprint)
	mp.FitsHost = mp.HostNeed <= mp.HostAvailable
	// A placement that holds nothing resident (a managed region of which
	// the free memory holds not one page) has no residency whose copies
	// could be counted.
	if !predict || mp.Footprint.Window < 1 || mp.Placement.Validate() != nil {
		return nil
	}
	if opts.Task == TaskGenerate {
		return opts.sizeGeneration(mp, dev, caps, sched)
	}
	copies, err := sched.Copies(mp.Placement, mp.Footprint.Window, batches, fed)
	if err != nil {
		return err
	}
	if p, ok := opts.profileFor(mp.Mode, dev, caps); ok {
		// The host profile was fitted with these batch moves counted, so
		// the cpu mode's prediction keeps them.
		pr := predictEpoch(sched.Work(), batches, copies, mp.Placement, p)
		mp.Prediction = &pr
	}
	// The cpu mode's "device" is the host: it copies nothing between
	// devices (its copied column is "-"), so its plan lists none.
	if mp.Mode.Copies() {
		mp.Copies = copies
	}
	return nil
}

// fed returns the inputs model is fed batch by batch, whose copies a plan
// counts: its input and target; none for a generation, whose passes are
// fed their own (engine.Schedule.PassCopies).
func (opts Options) fed(model *models.Model) []*gorgonia.Node {
	if opts.Task == TaskGenerate {
		return nil
	}
	return []*gorgonia.Node{model.Input, model.Target}
}

// dataBytes returns the bytes of the workload's data set without making
// it.
func (opts Options) dataBytes() int64 { return 4 * int64(opts.Workload.DataLen()) }

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

// TargetHostBinding names the host limit of a plan or fit given the
// target host's memory (Options.HostMemory), as device.HostLimit.Binding.
const TargetHostBinding = "--host-memory"

// plannedHost is the host memory a plan or a fit plans against: the
// target host's (Options.HostMemory), or what this process can still
// allocate here (device.ReadHostLimit).
func (opts Options) plannedHost() (device.HostLimit, error) {
	if opts.HostMemory > 0 {
		return device.HostLimit{Bytes: opts.HostMemory, Binding: TargetHostBinding}, nil
	}
	if opts.HostLimit.Bytes > 0 {
		return opts.HostLimit, nil
	}
	return device.ReadHostLimit()
}

// plannedHostNeed is the host memory a plan counts for a footprint on a
// device: hostNeed, but on a simulated GPU planned for a target host
// (Options.HostMemory) without the device's bytes, which the target's
// card holds in its own memory.
func (opts Options) plannedHostNeed(caps device.Caps, fp engine.Footprint) int64 {
	if opts.HostMemory > 0 && caps.Simulated {
		return fp.Host
	}
	return hostNeed(caps, fp)
}

// hostNeed is the host memory a footprint takes on a device: its host
// bytes, plus its device bytes where the device's memory is host memory.
func hostNeed(caps device.Caps, fp engine.Footprint) int64 {
	need := fp.Host
	if caps.HostMemory {
		need += fp.Device
	}
	return need
}

// hostShortfall says why a mode's footprint cannot fit what the host
// still lets this process allocate (device.ReadHostLimit), or "" when it
// fits. The data set, made before any mode, is already counted in that
// limit.
func hostShortfall(caps device.Caps, fp engine.Footprint) string {
	lim, err := device.ReadHostLimit()
	if err != nil {
		return ""
	}
	if need := hostNeed(caps, fp); need > lim.Bytes {
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
