package bench

import (
	"errors"
	"fmt"

	"gorgonia.org/gorgonia"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// Planner plans many run configurations of one workload, as PlanMemory
// plans each mode: the same footprint, host need, copies and prediction,
// but compiling the workload once per schedule the levers make
// (Config.Recompute and Config.Precision) and opening the device once, so that a search over
// hundreds of configurations (gpuz fit) costs little more than one plan.
// Nothing is allocated on the device.
type Planner struct {
	opts   Options
	header Header
	// gpu is the device of the cuda, cache, hybrid and managed modes; nil
	// without one (gpuStatus says why).
	gpu       device.Device
	gpuStatus Status
	gpuFree   int64
	gpuTotal  int64
	host      device.HostLimit
	compiled  map[levers.Set]compiled
}

// keyOf is cfg's lever settings, the key of the schedule compiled under
// them: "" read as the default.
func keyOf(cfg Config) levers.Set {
	k := cfg.Set
	k.Recompute, k.Precision, k.GradAccum = k.Recompute.Setting(), k.Precision.Setting(), k.GradAccum.Setting()
	return k
}

// defaultKey is the levers' defaults: no recompute, fp32.
var defaultKey = keyOf(Config{})

// compiled is the workload built and compiled under one lever setting.
type compiled struct {
	model *models.Model
	sched *engine.Schedule
}

// NewPlanner compiles opts' workload without levers and opens its device
// (opts.NewGPU), reading the device's free memory once. On a real GPU
// without a profile of its own, the device is measured first (as Run
// measures it) so that its configurations can be predicted. Close releases
// the device.
func NewPlanner(opts Options) (*Planner, error) {
	threads := opts.applyThreads()
	p := &Planner{opts: opts, compiled: map[levers.Set]compiled{}}
	p.opts.Set = levers.Set{}
	c, err := p.schedule(defaultKey)
	if err != nil {
		return nil, err
	}
	p.header = opts.header(c.model, models.Data{}, threads)
	p.header.DataBytes = opts.dataBytes()
	if p.host, err = opts.plannedHost(); err != nil {
		return nil, fmt.Errorf("planning the host memory: %w", err)
	}
	p.header.HostMemory, p.header.HostMemorySource = p.host.Bytes, p.host.Binding
	p.gpu, _, p.gpuStatus = opts.deviceFor(ResidentMode(true))
	if p.gpu == nil {
		return p, nil
	}
	if p.gpu.Caps().ComputeCapability != "" { // a real GPU
		p.opts.measured = newMeasuredProfiles(measureGemmN)
		p.opts.measured.of(p.gpu)
	}
	if p.gpuFree, p.gpuTotal, err = p.gpu.MemInfo(); err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", p.gpu.Name(), err), p.gpu.Close())
	}
	return p, nil
}

// Close closes the planner's device.
func (p *Planner) Close() error {
	if p.gpu == nil {
		return nil
	}
	return p.gpu.Close()
}

// Header describes the workload planned, as a plan's header does.
func (p *Planner) Header() Header { return p.header }

// Blocks is the number of the workload's blocks.
func (p *Planner) Blocks() int { return p.compiled[defaultKey].sched.Blocks() }

// MinWindow is the most blocks one step needs resident.
func (p *Planner) MinWindow() int { return p.compiled[defaultKey].sched.MinWindow() }

// Batches is the number of batches of an epoch.
func (p *Planner) Batches() int { return p.opts.Samples / p.opts.Batch }

// GPU returns the name of the device of the modes other than cpu and its
// free memory when the planner opened it, or the status that says why
// there is none.
func (p *Planner) GPU() (name string, free int64, status Status) {
	if p.gpu == nil {
		return "", 0, p.gpuStatus
	}
	return p.gpu.Name(), p.gpuFree, Status{Kind: StatusOK}
}

// HostAvailable is the host memory planned against: the target host's
// (Options.HostMemory), or what this process can still allocate on the
// host (device.ReadHostLimit), read once.
func (p *Planner) HostAvailable() int64 { return p.host.Bytes }

// schedule returns the workload compiled under the lever settings k,
// compiling it the first time.
func (p *Planner) schedule(k levers.Set) (compiled, error) {
	if c, ok := p.compiled[k]; ok {
		return c, nil
	}
	opts := p.opts
	opts.Set = k
	model, sched, err := opts.compile()
	if err != nil {
		return compiled{}, fmt.Errorf("compiling with recompute %s, precision %s, attention %q, LoRA %s, weights %v: %w", k.Recompute, k.Precision, k.Attention, k.LoRA, k.Weights, err)
	}
	p.compiled[k] = compiled{model, sched}
	return p.compiled[k], nil
}

// Footprint returns the placement of mode under cfg and what it needs,
// sized against deviceFree bytes (the auto policy's window 0 and the
// managed mode's resident pages are sized from it), without counting
// copies: the cheap half of Plan, for a search that discards what does
// not fit before predicting it.
func (p *Planner) Footprint(mode Mode, cfg Config, deviceFree int64) (engine.Placement, engine.Footprint, error) {
	c, err := p.schedule(keyOf(cfg))
	if err != nil {
		return nil, engine.Footprint{}, err
	}
	pl, err := placementOf(mode, cfg)
	if err != nil {
		return nil, engine.Footprint{}, err
	}
	return pl, c.sched.Footprint(pl, deviceFree), nil
}

// Trained returns the number of parameters training changes under cfg's
// levers: every parameter, or LoRA's adapters alone.
func (p *Planner) Trained(cfg Config) (int64, error) {
	c, err := p.schedule(keyOf(cfg))
	if err != nil {
		return 0, err
	}
	return c.model.TrainedCount(), nil
}

// Plan plans mode under cfg as PlanMemory plans a mode, less the memory
// picture's timeline (a search draws none), with deviceFree as
// the device's free memory (the caller's: the free memory read by
// NewPlanner less what it means to keep). With predict set it counts the
// placement's copies per epoch and predicts the epoch on the mode's
// profile, where it has one.
func (p *Planner) Plan(mode Mode, cfg Config, deviceFree int64, predict bool) (ModePlan, error) {
	c, err := p.schedule(keyOf(cfg))
	if err != nil {
		return ModePlan{}, err
	}
	pl, err := placementOf(mode, cfg)
	if err != nil {
		return ModePlan{}, err
	}
	dev, total := p.gpu, p.gpuTotal
	if mode.OnHost() {
		host := device.NewHost()
		defer host.Close()
		dev = host
		if deviceFree, total, err = host.MemInfo(); err != nil {
			return ModePlan{}, fmt.Errorf("%s: %w", mode, err)
		}
		if p.opts.HostMemory > 0 { // the target host's memory is the cpu mode's device
			deviceFree, total = p.opts.HostMemory, p.opts.HostMemory
		}
	}
	mp := ModePlan{Mode: mode, Recompute: cfg.Recompute.Setting(), Precision: cfg.Precision.Setting(), Placement: pl, HostAvailable: p.host.Bytes, Status: p.gpuStatus}
	if dev == nil {
		return mp, nil
	}
	mp.Status = Status{Kind: StatusOK}
	if err := pl.Usable(dev); err != nil {
		mp.Status = Status{Kind: StatusUnavailable, Reason: err.Error()}
		return mp, nil
	}
	mp.Device, mp.DeviceFree, mp.DeviceTotal = dev.Name(), deviceFree, total
	var fed []*gorgonia.Node // nil: no copies, no prediction
	if predict {
		fed = []*gorgonia.Node{c.model.Input, c.model.Target}
	}
	if p.opts.Task == TaskGenerate {
		fed = nil // each pass is fed its own ids and positions
	}
	if err := p.opts.sizeMode(&mp, dev, c.sched, p.header.DataBytes, p.Batches(), fed, predict); err != nil {
		return ModePlan{}, fmt.Errorf("%s: %w", mode, err)
	}
	return mp, nil
}

// placementOf is the placement a run of mode under cfg loads, as deviceFor
// gives it; an error for a configuration that cannot be loaded.
func placementOf(mode Mode, cfg Config) (engine.Placement, error) {
	if _, ok := rowOf(mode); !ok {
		return nil, fmt.Errorf("unknown mode %q", mode)
	}
	pl := mode.Placement(cfg)
	if err := pl.Validate(); err != nil {
		return pl, fmt.Errorf("%s: %w", mode, err)
	}
	return pl, nil
}

// BlockBytes returns the bytes of each block's area under cfg's levers as
// a placement that keeps it resident lays it out (engine.Schedule.BlockBytes):
// the least that keeping the block on the device costs there.
func (p *Planner) BlockBytes(cfg Config) ([]int64, error) {
	c, err := p.schedule(keyOf(cfg))
	if err != nil {
		return nil, err
	}
	return c.sched.BlockBytes(), nil
}
