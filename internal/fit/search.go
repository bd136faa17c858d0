// Package fit answers the question gpuz exists for: with the memory the
// device has free, how should this workload run, and what will it cost?
// It enumerates the configurations gpuz can run a workload in (a cross
// product of dimensions: the placement, then each lever), plans each as
// gpuz plan does (bench.Planner), keeps those whose device need fits the
// free memory less a margin and whose host need fits the host, and ranks
// them by the model's predicted epoch time. Verify runs the best of them
// and checks the plan and the prediction against the run.
package fit

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gpuz/internal/bench"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
	"gpuz/internal/quant"
	"gpuz/internal/units"
)

// DefaultMarginPercent is the share of the device's free memory (after
// --take) a search keeps free by default: what the plan does not count on
// a real GPU (docs/fit.md says why 5).
const DefaultMarginPercent = 5

// Options configures a search.
type Options struct {
	// Bench is the workload, task, sizes, device (NewGPU) and host profile
	// as a run's options; their Modes and Config are ignored: the search
	// chooses them.
	Bench bench.Options
	// TakeBytes is subtracted from the device's free memory without
	// holding anything, as if another program held it.
	TakeBytes int64
	// MarginPercent is the share of the free memory, after TakeBytes, kept
	// free: in [0, 100).
	MarginPercent float64
	// Command, when set, returns the command line that runs a candidate,
	// for Entry.Command: the command line's syntax is the caller's.
	Command func(Candidate) string
	// LoRA lists the LoRA settings to rank together (--lora 0,16: full
	// fine-tuning and LoRA at rank 16); nil is the workload's own. LoRA
	// decides what is trained, so it is the user's choice: the search
	// never adds a setting.
	LoRA []levers.LoRA
	// Weights lists the storages of the frozen weights to rank together
	// (levers.Set.Weights: quant.F32 for the precision's floats, or a
	// quantized kind); nil is the floats only.
	Weights []quant.Kind
	// Batches lists the batches to rank together (--batch 4,8): a search
	// at each, every candidate naming its own (Candidate.Batch); nil is
	// the workload's own batch alone.
	Batches []int
	// batch is the batch a search of one of Batches plans at, which its
	// candidates name; 0 for the workload's own.
	batch int
	// Progress, when set, is told how a long search advances: the
	// configurations planned of how many, and the longest sequence's
	// steps (LongestSequences). It is called on the searching goroutine.
	Progress func(Progress)
}

// Progress is how far a search is: Phase names what it does, Done of
// Total (0 when the total is not known ahead: a search's steps up to a
// length).
type Progress struct {
	Phase       string
	Done, Total int
}

// progress tells o.Progress, when set, how far the search is.
func (o Options) progress(phase string, done, total int) {
	if o.Progress != nil {
		o.Progress(Progress{Phase: phase, Done: done, Total: total})
	}
}

// Validate reports options no search can use.
func (o Options) Validate() error {
	switch {
	case math.IsNaN(o.MarginPercent) || o.MarginPercent < 0 || o.MarginPercent >= 100:
		return fmt.Errorf("the margin must be a percentage from 0 up to (not including) 100, got %g", o.MarginPercent)
	case o.TakeBytes < 0:
		return fmt.Errorf("negative take %d", o.TakeBytes)
	}
	return nil
}

// Candidate is one configuration a workload can run in: a mode and the
// run configuration that bench.Run takes, its placement the one the
// search enumerated (Config.Placed) and its levers.
type Candidate struct {
	Mode bench.Mode
	bench.Config
	// Batch is the batch the candidate runs, when the search ranks
	// several (Options.Batches); 0 for the workload's own.
	Batch int
	// Trained is the parameters training changes under Config.LoRA when
	// it is on (its adapters), 0 otherwise: the search fills it.
	Trained int64
}

// Entry is a candidate planned: what it needs, its copies and prediction
// (Plan), and whether it fits.
type Entry struct {
	Candidate
	Plan bench.ModePlan
	// Fits says the device need is within the budget (Result.Budget; the
	// cpu mode has no device) and the host need within the host's
	// available memory.
	Fits bool
	// Command is the command line that runs it (Options.Command).
	Command string
}

// Predicted is the entry's predicted epoch time, 0 without a prediction.
func (e Entry) Predicted() float64 {
	if e.Plan.Prediction == nil {
		return 0
	}
	return e.Plan.Prediction.Model.Seconds()
}

// Result is a search's answer.
type Result struct {
	Header bench.Header
	Blocks int
	// Device is the device of the modes other than cpu, "" when there is
	// none (--device cpu).
	Device string
	// DeviceFree is the device's free memory less TakeBytes; Budget is
	// DeviceFree less the margin: what a configuration's device need must
	// fit.
	DeviceFree, Budget, TakeBytes int64
	MarginPercent                 float64
	HostAvailable                 int64
	// Batches are the batches ranked together (Options.Batches), nil
	// for the workload's own alone.
	Batches []int
	// HostProfile names the profile the cpu mode is predicted on, "" when
	// there is none (the cpu is then listed unranked).
	HostProfile string
	// Searched is the number of candidates the search considered;
	// Planned those of them it planned, the others ruled out unplanned
	// by a lower bound on their device need over the budget (a larger
	// window of a family over it; a split whose device blocks' areas
	// alone are).
	Searched, Planned int
	// Ranked are the candidates that fit with a prediction, fastest first,
	// but within a tie (TieFraction) the simpler first, and one that
	// changes the results (Candidate.ChangesResults) above one that does
	// not only when faster by more than ResultsGainFraction
	// (rankByPrediction; docs/fit.md).
	Ranked []Entry
	// Unranked fit without a prediction (the hybrid mode, which the model
	// does not predict; the cpu without a host profile; a device without
	// a profile), the fewest bytes copied per epoch first.
	Unranked []Entry
	// Smallest is the candidate on the device with the least device need,
	// fitting or not, the managed mode aside (its need is the free memory
	// it is given); CUDA is the cuda mode without levers. Both are zero
	// (Mode "") without a device.
	Smallest, CUDA Entry
	// CPU is the cpu mode without levers.
	CPU Entry
	// LongestContext is, for a generation asked with --context max, the
	// longest context the recommended configuration fits
	// (LongestContext); 0 otherwise.
	LongestContext int
	// LongestSequences are, for training or evaluation asked with
	// --seq-len max, the longest sequence each mode on the device fits,
	// longest first (LongestSequences); the search ranked at the first's
	// length. Nil otherwise.
	LongestSequences []Longest
	// HostBound is the candidate on the device whose device need is
	// within the budget but whose host need is over the host's available
	// memory, with the least host need (on a tie, not managed, whose
	// device need is its whole budget, then the least device need); zero
	// (Mode "") when there is none. When nothing fits and it is set, the host is the limit.
	HostBound Entry
}

// Best returns the configuration the search recommends: the fastest ranked
// one, else the first unranked one; false when nothing fits.
func (r Result) Best() (Entry, bool) {
	if len(r.Ranked) > 0 {
		return r.Ranked[0], true
	}
	if len(r.Unranked) > 0 {
		return r.Unranked[0], true
	}
	return Entry{}, false
}

// Search plans every candidate of opts' workload and ranks those that fit.
func Search(opts Options) (Result, error) {
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	if len(opts.Batches) > 0 {
		return searchBatches(opts)
	}
	opts.progress("building the workload's schedule", 0, 0)
	p, err := bench.NewPlanner(opts.Bench)
	if err != nil {
		return Result{}, err
	}
	res, err := search(p, opts)
	return res, errors.Join(err, p.Close())
}

// search is Search on an open planner.
func search(p *bench.Planner, opts Options) (Result, error) {
	res := Result{Header: p.Header(), Blocks: p.Blocks(), TakeBytes: opts.TakeBytes,
		MarginPercent: opts.MarginPercent, HostAvailable: p.HostAvailable()}
	res.Header.TakeBytes = opts.TakeBytes
	if h := opts.Bench.HostProfile; h != nil {
		res.HostProfile = h.Name
	}
	name, free, _ := p.GPU()
	hasGPU := name != ""
	if hasGPU {
		res.Device = name
		res.DeviceFree = max(free-opts.TakeBytes, 0)
		res.Budget = res.DeviceFree - int64(float64(res.DeviceFree)*opts.MarginPercent/100)
	}
	train := opts.Bench.Task == bench.TaskTrain
	var all []Entry
	attention := levers.Attention(p.Header().Attention) // "" without attention layers
	if opts.Bench.Task == bench.TaskGenerate {
		attention = "" // a generation attends through its caches either way
	}
	cs := Candidates(p.Blocks(), p.MinWindow(), train, hasGPU, attention, opts.Weights, GradAccums(train, opts.Bench.Batch), opts.LoRA...)
	for i := range cs {
		cs[i].Batch = opts.batch
	}
	// tooBig holds the families (a cache configuration less its window)
	// whose window of some size was over the budget: a larger window holds
	// more blocks and needs more, so it is ruled out unplanned. The
	// candidates come window by window, smallest first.
	tooBig := map[string]bool{}
	bound := deviceBound{p: p, areas: map[string][]int64{}}
	for i, c := range cs {
		opts.progress("planning configurations", i, len(cs))
		family := ""
		if without, ok := c.Mode.WindowFamily(c.Config); ok {
			f := c
			f.Config = without
			if family = f.String(); tooBig[family] {
				continue
			}
		}
		if hasGPU {
			least, err := bound.of(c)
			if err != nil {
				return Result{}, fmt.Errorf("planning %s: %w", c, err)
			}
			if least > res.Budget {
				continue
			}
		}
		if c.LoRA.On() {
			var err error
			if c.Trained, err = p.Trained(c.Config); err != nil {
				return Result{}, fmt.Errorf("planning %s: %w", c, err)
			}
		}
		e, err := plan(p, c, res.Budget)
		if err != nil {
			return Result{}, fmt.Errorf("planning %s: %w", c, err)
		}
		if opts.Command != nil {
			e.Command = opts.Command(c)
		}
		if family != "" && e.Plan.Status.Kind == bench.StatusOK && !e.Plan.FitsDevice {
			tooBig[family] = true
		}
		all = append(all, e)
	}
	opts.progress("planning configurations", len(cs), len(cs))
	res.Searched, res.Planned = len(cs), len(all)
	all = dropUselessLevers(all)
	for _, e := range all {
		switch {
		case e.Mode.Resident() && e.Mode.OnHost() && !e.HasLevers():
			res.CPU = e
		case e.Mode.Resident() && !e.Mode.OnHost() && !e.HasLevers():
			res.CUDA = e
		}
		// A migrating mode's need is the free memory it is given, not a
		// least need: it is left out of the smallest.
		if !e.Mode.OnHost() && !e.Mode.Migrates() && e.Plan.Status.Kind == bench.StatusOK &&
			(res.Smallest.Mode == "" || e.Plan.Footprint.Device < res.Smallest.Plan.Footprint.Device) {
			res.Smallest = e
		}
		// A managed budget under one page fits the device in name only
		// (plan).
		onDevice := e.Plan.FitsDevice && (!e.Mode.Migrates() || e.Plan.Footprint.Window >= 1)
		if !e.Mode.OnHost() && e.Plan.Status.Kind == bench.StatusOK && onDevice && !e.Plan.FitsHost &&
			(res.HostBound.Mode == "" || cmp.Or(cmp.Compare(e.Plan.HostNeed, res.HostBound.Plan.HostNeed),
				cmpBool(e.Mode.Migrates(), res.HostBound.Mode.Migrates()),
				cmp.Compare(e.Plan.Footprint.Device, res.HostBound.Plan.Footprint.Device)) < 0) {
			res.HostBound = e
		}
		switch {
		case !e.Fits:
		case e.Plan.Prediction != nil:
			res.Ranked = append(res.Ranked, e)
		default:
			res.Unranked = append(res.Unranked, e)
		}
	}
	// Within a tie (TieFraction) the simpler ranks first: a lever costs
	// time or accuracy, and gains nothing there; one that changes the
	// results must gain ResultsGainFraction (rankByPrediction).
	res.Ranked = rankByPrediction(res.Ranked)
	// A stable sort keeps the candidates' order among equals.
	slices.SortStableFunc(res.Unranked, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(copied(a), copied(b)), cmp.Compare(a.Plan.Footprint.Device, b.Plan.Footprint.Device))
	})
	return res, nil
}

// deviceBound is a lower bound on a candidate's device need that costs
// no plan: the areas of the blocks its placement keeps resident on the
// device (engine.Schedule.BlockBytes), each allocated there whatever
// else is. A hybrid split of a model whose every block is larger than
// the budget (a layer of width 65,536: 200 GB) is ruled out this way,
// where planning the 35,000 splits of its 500 layers took minutes.
type deviceBound struct {
	p *bench.Planner
	// areas holds the blocks' bytes of each setting of the levers.
	areas map[string][]int64
}

// of returns a hybrid candidate's bound: the areas of its blocks
// resident on the device; 0 for the other modes, which the search plans
// whatever the bound (their plans name the least need when nothing fits).
func (d deviceBound) of(c Candidate) (int64, error) {
	h, ok := c.Placement().(engine.Hybrid)
	if !ok {
		return 0, nil
	}
	levers := c
	levers.Placements, levers.Placed = bench.Placements{}, nil
	key := levers.String()
	areas, ok := d.areas[key]
	if !ok {
		var err error
		if areas, err = d.p.BlockBytes(c.Config); err != nil {
			return 0, err
		}
		d.areas[key] = areas
	}
	var least int64
	for b, n := range areas {
		if h.Blocks[b] == engine.OnDevice {
			least += n
		}
	}
	return least, nil
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// copied is the bytes an entry copies per epoch, both ways.
func copied(e Entry) int64 { return e.Plan.Copies.UploadBytes + e.Plan.Copies.DownloadBytes }

// plan plans one candidate against the budget: its footprint first, and
// only when that fits its copies and prediction, which cost a walk of the
// schedule.
func plan(p *bench.Planner, c Candidate, budget int64) (Entry, error) {
	e := Entry{Candidate: c}
	mp, err := p.Plan(c.Mode, c.Config, budget, false)
	if err != nil {
		return e, err
	}
	e.Fits = fits(c, mp)
	if e.Fits {
		if mp, err = p.Plan(c.Mode, c.Config, budget, true); err != nil {
			return e, err
		}
	}
	e.Plan = mp
	return e, nil
}

// fits says whether candidate c, planned as mp, fits: its plan is whole,
// its host need within the host's available memory and its device need
// within the budget, and a migrating mode's budget holds a page (under
// one page no kernel can run).
func fits(c Candidate, mp bench.ModePlan) bool {
	if c.Mode.Migrates() && mp.Footprint.Window < 1 {
		return false
	}
	return mp.Status.Kind == bench.StatusOK && mp.FitsHost && (c.Mode.OnHost() || mp.FitsDevice)
}

// dropUselessLevers removes each candidate that sets a lever to other
// than its default without lowering the device need or the predicted
// time against the same candidate with that lever at its default: a
// lever trades time (recompute runs the forward again) or accuracy (16
// bits) for memory, and one that saves nothing only costs. So go
// recompute in evaluation, or for a model whose blocks keep nothing but
// their inputs, and a 16-bit setting that neither shrinks nor speeds up
// its candidate.
func dropUselessLevers(all []Entry) []Entry {
	byName := map[string]Entry{}
	for _, e := range all {
		byName[e.String()] = e
	}
	return slices.DeleteFunc(all, func(e Entry) bool {
		for _, reset := range leverDefaults {
			c, set := reset(e.Candidate)
			if !set {
				continue
			}
			// A lever that makes its candidate fit, where the same
			// candidate without it does not (the host's memory, say), is
			// useful whatever the device needs say.
			if d, ok := byName[c.String()]; ok && (d.Fits || !e.Fits) && e.Plan.Footprint.Device >= d.Plan.Footprint.Device && !faster(e, d) {
				return true
			}
		}
		return false
	})
}

// faster reports whether a is predicted faster than b; false when either
// has no prediction.
func faster(a, b Entry) bool {
	return a.Plan.Prediction != nil && b.Plan.Prediction != nil && a.Plan.Prediction.Model < b.Plan.Prediction.Model
}

// leverDefaults are the search's levers, each as a function that returns
// a candidate with the lever at its default and whether it was set
// otherwise.
var leverDefaults = []func(Candidate) (Candidate, bool){
	func(c Candidate) (Candidate, bool) {
		set := c.Recompute.On()
		c.Recompute = ""
		return c, set
	},
	func(c Candidate) (Candidate, bool) {
		set := c.Precision.Half()
		c.Precision = ""
		return c, set
	},
	// The workload's own attention against the other: fused keeps less
	// and computes the scores twice in training.
	func(c Candidate) (Candidate, bool) {
		set := c.Attention != ""
		c.Attention = ""
		return c, set
	},
	// fp16 against bf16: the same bytes and rates, and a loss scale that
	// may skip steps; fp16 stays only where it would gain something.
	func(c Candidate) (Candidate, bool) {
		set := c.Precision == levers.FP16
		c.Precision = levers.BF16
		return c, set
	},
	// Quantized weights against the precision's floats.
	func(c Candidate) (Candidate, bool) {
		set := c.Weights != quant.F32
		c.Weights = quant.F32
		return c, set
	},
	// Gradient accumulation against none: it saves a micro-batch's
	// activations but keeps an accumulator per trained parameter and
	// runs K smaller steps.
	func(c Candidate) (Candidate, bool) {
		set := c.GradAccum.On()
		c.GradAccum = 0
		return c, set
	},
}

// HasLevers reports whether c sets any lever to other than its default.
func (c Candidate) HasLevers() bool {
	for _, reset := range leverDefaults {
		if _, set := reset(c); set {
			return true
		}
	}
	return false
}

// String describes a candidate in a few words: "cuda", "cache auto
// policy, 4 blocks, optimizer on host", "hybrid host:0-2,cuda:3-11", "managed,
// advise host", each followed by its batch when a search ranks several
// ("batch 8") and its levers ("recompute blocks", "bf16", "grad-accum 2").
func (c Candidate) String() string {
	s := string(c.Mode) + c.Placement().Describe(engine.Footprint{}, 0, engine.Named)
	if c.Batch != 0 {
		s += fmt.Sprintf(", batch %d", c.Batch)
	}
	if c.Recompute.On() {
		s += ", recompute " + c.Recompute.String()
	}
	if c.Precision.Half() {
		s += ", " + c.Precision.String()
	}
	if c.Attention != "" {
		s += ", " + string(c.Attention) + " attention"
	}
	if c.Weights.Quantized() {
		s += ", " + c.Weights.String() + " weights"
	}
	if c.GradAccum.On() {
		s += fmt.Sprintf(", grad-accum %d", c.GradAccum)
	}
	if c.LoRA.On() {
		s += fmt.Sprintf(", LoRA R=%d (%s trained)", c.LoRA.Rank, units.Count(c.Trained))
	}
	return s
}

// dimension is one axis of the search: each value sets its part of a
// candidate.
type dimension []func(*Candidate)

// cross returns the cross product of dims, the first varying slowest.
func cross(dims ...dimension) []Candidate {
	out := []Candidate{{}}
	for _, d := range dims {
		next := make([]Candidate, 0, len(out)*len(d))
		for _, c := range out {
			for _, set := range d {
				c2 := c
				set(&c2)
				next = append(next, c2)
			}
		}
		out = next
	}
	return out
}

// Candidates returns every configuration a search plans for a workload of
// blocks blocks whose steps need at most minWindow resident: the cross
// product of the placements and each lever's values (recompute, the
// precision, and for a workload whose attention is computed as attention
// says, the other way too; "" for a workload without attention layers),
// each storage of the frozen weights of weights (nil: the floats), each
// gradient accumulation of accums (nil: none; GradAccums) and each LoRA
// setting of loras (none: the workload's own). Adding a lever is one more
// dimension here, and one more entry of leverDefaults.
func Candidates(blocks, minWindow int, train, gpu bool, attention levers.Attention, weights []quant.Kind, accums []levers.GradAccum, loras ...levers.LoRA) []Candidate {
	if accums == nil {
		accums = []levers.GradAccum{0}
	}
	return cross(loraSettings(loras), placements(blocks, minWindow, train, gpu), recomputes(train), precisions(), attentions(attention), weightSettings(weights), gradAccums(accums))
}

// weightSettings is the weights' dimension: each kind of kinds, or the
// floats alone.
func weightSettings(kinds []quant.Kind) dimension {
	d := dimension{func(*Candidate) {}}
	if len(kinds) > 0 {
		d = nil
	}
	for _, k := range kinds {
		d = append(d, func(c *Candidate) { c.Weights = k })
	}
	return d
}

// loraSettings is LoRA's dimension: the settings the user gave, or the
// workload's own (the zero value).
func loraSettings(loras []levers.LoRA) dimension {
	d := dimension{func(*Candidate) {}}
	if len(loras) > 0 {
		d = nil
	}
	for _, l := range loras {
		d = append(d, func(c *Candidate) { c.LoRA = l })
	}
	return d
}

// placements is the placement dimension: each mode's placements as its
// row of the modes table enumerates them (bench.Search), the host's
// first; without a device, the host's only.
func placements(blocks, minWindow int, train, gpu bool) dimension {
	var d dimension
	for _, mp := range bench.Search(bench.Space{Blocks: blocks, MinWindow: minWindow, Train: train}, gpu) {
		d = append(d, func(c *Candidate) { c.Mode, c.Placed = mp.Mode, mp.Placement })
	}
	return d
}

// recomputes is the recompute lever's dimension: every setting when
// training; evaluation saves nothing, so none.
func recomputes(train bool) dimension {
	values := []levers.Recompute{levers.RecomputeNone}
	if train {
		values = levers.Recomputes()
	}
	d := make(dimension, len(values))
	for i, r := range values {
		d[i] = func(c *Candidate) { c.Recompute = r }
	}
	return d
}

// precisions is the precision's dimension: every setting, in training
// and evaluation.
func precisions() dimension {
	values := levers.Precisions()
	d := make(dimension, len(values))
	for i, p := range values {
		d[i] = func(c *Candidate) { c.Precision = p }
	}
	return d
}

// attentions is the attention's dimension: the workload's own (""), and
// the other way where the workload has attention layers (def, its own,
// not "").
func attentions(def levers.Attention) dimension {
	d := dimension{func(c *Candidate) { c.Attention = "" }}
	for _, a := range levers.Attentions() {
		if def != "" && a != def {
			d = append(d, func(c *Candidate) { c.Attention = a })
		}
	}
	return d
}

// Family is the candidate less its window: the configurations a table
// shows once, at their fastest window.
func (c Candidate) Family() Candidate {
	c.Config, _ = c.Mode.WindowFamily(c.Config)
	return c
}

// Placement is the candidate's placement: the one the search enumerated,
// or its mode's under its configuration's placement options.
func (c Candidate) Placement() engine.Placement { return c.Mode.Placement(c.Config) }

// PlaceText is a hybrid candidate's placement as --place reads it
// ("host:0-2,cuda:3-11"), "" for the other modes.
func (c Candidate) PlaceText() string { return c.Placement().Settings().Blocks }
