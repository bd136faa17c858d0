package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/quant"
)

// DeviceOp is an op the engine runs: Launch computes it with a device's
// kernels, from argument buffers whose shapes are given, into out, which
// never aliases an argument but for an op that overwrites one in place
// (gorgonia.Op.OverwritesInput ≥ 0: the engine makes that argument's
// buffer its output). Every op of package ops is one.
type DeviceOp interface {
	Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error
}

// boundStep is a step with its argument shapes and a reusable slice for its
// argument buffers, so that running it allocates nothing.
type boundStep struct {
	step
	argBuffers []device.Buffer
	shapes     []tensor.Shape
}

// Program is a Schedule loaded on a device: every buffer it needs is allocated
// once, and each Run reuses them. What its placement keeps apart from the
// buffers (a paged placement's host masters and window, a managed one's
// pages) is the placement's: the Program calls its hooks.
type Program struct {
	sched   *Schedule
	dev     device.Device
	k       device.Kernels
	placed  placed          // the placement's hooks
	buffers []device.Buffer // per value: its own buffer, a view of the arena or of its block's area, nil while paged out
	moments [][2]device.Buffer
	// masters holds each 16-bit parameter's float32 master where its
	// moments are, nil for the others and where the host keeps it.
	masters []device.Buffer
	// accums holds each trained parameter's gradient accumulator where
	// its moments are, when the schedule accumulates (Spec.Accumulate);
	// nil for the others and where the host keeps it. micro is the Run's
	// micro-batch within its optimizer step, from 0.
	accums []device.Buffer
	micro  int
	owned  []device.Buffer // what Close frees on dev
	// scratch is each side's float32 scratch (device 0, host 1) that
	// 16-bit steps and updates convert through; nil under fp32.
	scratch16  [2]device.Buffer
	converters [2]converter // over scratch16, reset by converter()
	// loss is fp16 training's loss scale; overflowed says whether a block
	// of the current step skipped its update.
	loss       LossScale
	overflowed bool
	seedScale  float64 // the value in the seed's buffer
	// host computes a hybrid placement's host blocks with hk; hostOwned
	// is what Close frees on it.
	host      device.Device
	hk        device.Kernels
	hostOwned []device.Buffer
	// sides says where each step runs and each value lives; mirrors holds
	// the other side's copy of each value that crosses between them.
	sides     sides
	mirrors   []device.Buffer
	steps     []boundStep
	adamSteps []int // Adam steps taken, per block
	scratch   []float32
	layouts   []layout
	// gradSquares holds each parameter's gradient's sum of squares,
	// computed right after the gradient, while it is still in cache.
	gradSquares []float64
	// ctx is LoadContext's: once it is done, no allocation or step starts.
	ctx context.Context
}

// Load allocates the schedule's memory on dev for a placement. On error,
// including the device running out of memory, nothing stays allocated.
func (sc *Schedule) Load(dev device.Device, pl Placement) (*Program, error) {
	return sc.LoadContext(context.Background(), dev, pl)
}

// LoadContext is Load, stopped by ctx: once ctx is done, the load
// allocates nothing more and fails with ctx's error, releasing what it
// took, and the program it returned runs no further step (Run and
// RunPass fail with that error between two steps). A load of gigabytes
// faults its memory in for tens of seconds, and a step of a large model
// takes a fraction of a second where the whole step takes a minute: so a
// signal stops either within a buffer or a step.
func (sc *Schedule) LoadContext(ctx context.Context, dev device.Device, pl Placement) (prog *Program, err error) {
	bd, err := sc.bindValid(pl)
	if err != nil {
		return nil, err
	}
	host := device.NewHost()
	prog = &Program{sched: sc, dev: dev, k: dev.Kernels(), placed: stays{}, host: host, hk: host.Kernels(), sides: bd.sides(),
		buffers: make([]device.Buffer, len(sc.values)), mirrors: make([]device.Buffer, len(sc.values)), moments: make([][2]device.Buffer, len(sc.params)),
		masters: make([]device.Buffer, len(sc.params)), accums: make([]device.Buffer, len(sc.params)), loss: newLossScale(), seedScale: 1,
		adamSteps: make([]int, len(sc.spec.Blocks)), scratch: make([]float32, 1),
		gradSquares: make([]float64, len(sc.params)), ctx: ctx}
	loading := prog // the returns below set prog to nil before this runs
	defer func() {
		if err != nil {
			loading.Close()
		}
	}()
	if prog.placed, err = bd.load(prog); err != nil {
		prog.placed = stays{}
		return nil, err
	}
	return prog.bindSteps()
}

// bindSteps prepares each step's argument buffers and shapes, the last
// part of Load.
func (prog *Program) bindSteps() (*Program, error) {
	sc := prog.sched
	prog.steps = make([]boundStep, len(sc.steps))
	for i, s := range sc.steps {
		b := boundStep{step: s, argBuffers: make([]device.Buffer, len(s.args)), shapes: make([]tensor.Shape, len(s.args))}
		for j, a := range s.args {
			b.shapes[j] = sc.values[a].shape
		}
		prog.steps[i] = b
	}
	return prog, nil
}

// stopped is the load's context's error, wrapped, once it is done.
func (prog *Program) stopped() error {
	if err := prog.ctx.Err(); err != nil {
		return fmt.Errorf("engine: stopped: %w", err)
	}
	return nil
}

// alloc allocates a buffer that Close frees.
func (prog *Program) alloc(n int) (device.Buffer, error) {
	if err := prog.stopped(); err != nil {
		return nil, err
	}
	b, err := prog.dev.Alloc(n)
	if err != nil {
		return nil, err
	}
	prog.owned = append(prog.owned, b)
	return b, nil
}

// allocOn allocates a buffer on the host when onHost is set, else on the
// device; Close frees it.
func (prog *Program) allocOn(onHost bool, n int) (device.Buffer, error) {
	if !onHost {
		return prog.alloc(n)
	}
	if err := prog.stopped(); err != nil {
		return nil, err
	}
	b, err := prog.host.Alloc(n)
	if err != nil {
		return nil, err
	}
	prog.hostOwned = append(prog.hostOwned, b)
	return b, nil
}

// on returns the host when onHost is set, else the device.
func (prog *Program) on(onHost bool) device.Device {
	if onHost {
		return prog.host
	}
	return prog.dev
}

// bind points block b's parameters, moments and saved values at their
// places in area, on the block's side.
func (prog *Program) bind(b int, area device.Buffer) {
	sc, l := prog.sched, prog.layouts[b]
	d := prog.on(prog.sides.blockHost[b])
	for j, i := range l.params {
		pv := sc.params[i]
		prog.buffers[pv] = d.View(area, l.offsets[j], sc.values[pv].elems)
		if l.moments != nil && l.moments[j][0] >= 0 {
			n := sc.count(pv)
			prog.moments[i] = [2]device.Buffer{d.View(area, l.moments[j][0], n), d.View(area, l.moments[j][1], n)}
			if l.masters[j] >= 0 {
				prog.masters[i] = d.View(area, l.masters[j], n)
			}
			if l.accums[j] >= 0 {
				prog.accums[i] = d.View(area, l.accums[j], n)
			}
		}
	}
	for j, v := range sc.saved[b] {
		prog.buffers[v] = d.View(area, l.saved[j], sc.values[v].elems)
	}
}

// unbind marks block b's members as not on the device.
func (prog *Program) unbind(b int) {
	sc, l := prog.sched, prog.layouts[b]
	for _, i := range l.params {
		prog.buffers[sc.params[i]] = nil
		if l.moments != nil {
			prog.moments[i] = [2]device.Buffer{}
			prog.masters[i] = nil
			prog.accums[i] = nil
		}
	}
	for _, v := range sc.saved[b] {
		prog.buffers[v] = nil
	}
}

// Close frees the program's memory and what its placement holds.
func (prog *Program) Close() {
	for _, b := range prog.owned {
		prog.dev.Free(b)
	}
	for _, b := range prog.hostOwned {
		prog.host.Free(b)
	}
	prog.placed.free()
	prog.owned, prog.hostOwned = nil, nil
}

// SetInput copies data into the buffer of an input or parameter node.
func (prog *Program) SetInput(n *gorgonia.Node, data []float32) error {
	i, ok := prog.sched.index[n]
	if !ok || prog.sched.values[i].kind == kindTemporary || prog.sched.values[i].kind == kindSeed {
		return fmt.Errorf("engine: %s is not an input or parameter of the program", n.Name())
	}
	if prog.sched.values[i].store == quantized {
		if len(data) != prog.sched.count(i) {
			return fmt.Errorf("engine: setting %s: %d values for %d elements", n.Name(), len(data), prog.sched.count(i))
		}
		words, err := prog.sched.quantizedWords(i, data)
		if err != nil {
			return fmt.Errorf("engine: setting %s: %w", n.Name(), err)
		}
		return prog.setWords(i, words)
	}
	if set, err := prog.placed.setParam(i, data); set || err != nil {
		if err != nil {
			return fmt.Errorf("engine: setting %s: %w", n.Name(), err)
		}
		return nil
	}
	d := prog.on(prog.sides.valueHost[i])
	if v := prog.sched.values[i]; v.store.narrow() {
		if len(data) != prog.sched.count(i) {
			return fmt.Errorf("engine: setting %s: %d values for %d elements", n.Name(), len(data), prog.sched.count(i))
		}
		if m := prog.masterOf(i); m != nil {
			if err := prog.on(prog.sides.blockHost[v.block]).Upload(m, data); err != nil {
				return fmt.Errorf("engine: setting %s's master: %w", n.Name(), err)
			}
		}
		data = packedHalf(prog.sched.formatOf(i), data)
	}
	if err := d.Upload(prog.buffers[i], data); err != nil {
		return fmt.Errorf("engine: setting %s: %w", n.Name(), err)
	}
	return nil
}

// SetStored sets parameter n, stored quantized (StoredKind), to the bytes
// of its blocks as they are, a file's: kind.Bytes of its matrix. Nothing
// is quantized again.
func (prog *Program) SetStored(n *gorgonia.Node, b []byte) error {
	i, ok := prog.sched.index[n]
	if !ok || prog.sched.values[i].store != quantized {
		return fmt.Errorf("engine: %s is not a quantized parameter of the program", n.Name())
	}
	v := prog.sched.values[i]
	if want := v.qkind.Bytes(v.shape[0], v.shape[1]); int64(len(b)) != want {
		return fmt.Errorf("engine: setting %s: %d bytes for a %v matrix of %d", n.Name(), len(b), v.qkind, want)
	}
	words := make([]float32, v.elems)
	copy(wordBytes(words), b)
	return prog.setWords(i, words)
}

// StoredKind returns the quantized kind parameter n is stored in; ok is
// false for a value stored in floats.
func (prog *Program) StoredKind(n *gorgonia.Node) (kind quant.Kind, ok bool) {
	i, found := prog.sched.index[n]
	if !found || prog.sched.values[i].store != quantized {
		return 0, false
	}
	return prog.sched.values[i].qkind, true
}

// setWords copies a quantized parameter's words, as stored, to wherever
// it lives: a paged block's master area (and its device copy when
// resident), or its buffer.
func (prog *Program) setWords(i int, words []float32) error {
	name := prog.sched.values[i].node.Name()
	if set, err := prog.placed.setParam(i, words); set || err != nil {
		if err != nil {
			return fmt.Errorf("engine: setting %s: %w", name, err)
		}
		return nil
	}
	if err := prog.on(prog.sides.valueHost[i]).Upload(prog.buffers[i], words); err != nil {
		return fmt.Errorf("engine: setting %s: %w", name, err)
	}
	return nil
}

// masterOf returns the float32 master of 16-bit parameter value v on its
// block's side, nil when it has none there.
func (prog *Program) masterOf(v int) device.Buffer {
	if i := prog.sched.paramIndex(v); i >= 0 {
		return prog.masters[i]
	}
	return nil
}

// Read copies the current value of an input, a parameter, a block's
// state or a pass's output (Spec.Passes) into a new slice.
func (prog *Program) Read(n *gorgonia.Node) ([]float32, error) {
	i, ok := prog.sched.index[n]
	readable := ok && (prog.sched.values[i].kind == kindInput || prog.sched.values[i].kind == kindParam ||
		slices.Contains(prog.sched.spec.Passes, n))
	if !readable {
		return nil, fmt.Errorf("engine: %s is not an input, parameter or pass output of the program", n.Name())
	}
	if prog.buffers[i] == nil { // a paged-out parameter: its host master is current
		return prog.placed.readParam(i)
	}
	if m := prog.masterOf(i); m != nil { // a 16-bit parameter's float32 master
		out := make([]float32, prog.sched.count(i))
		if err := prog.on(prog.sides.blockHost[prog.sched.values[i].block]).Download(out, m); err != nil {
			return nil, fmt.Errorf("engine: reading %s's master: %w", n.Name(), err)
		}
		return out, nil
	}
	return prog.download(i)
}

// Gradient returns the gradient of parameter n from the last Run, of the
// loss as the program computed it (fp16 training's scaled loss's divided
// by the scale it ran with); when the schedule accumulates gradients, the
// mean of the accumulated ones, the last optimizer step's once its last
// micro-batch has run. The schedule must have been compiled with
// RetainGradients.
func (prog *Program) Gradient(n *gorgonia.Node) ([]float32, error) {
	if !prog.sched.spec.RetainGradients {
		return nil, errors.New("engine: gradients are kept only with RetainGradients")
	}
	for i, pv := range prog.sched.params {
		if prog.sched.values[pv].node == n {
			if prog.sched.grads[i] < 0 {
				return nil, fmt.Errorf("engine: %s is frozen: it has no gradient", n.Name())
			}
			if prog.sched.accumulates() {
				return prog.accumulated(i)
			}
			g, err := prog.download(prog.sched.grads[i])
			if err == nil && prog.scalesLoss() { // the scaled loss's: unscaled
				for j := range g {
					g[j] = float32(float64(g[j]) / prog.seedScale)
				}
			}
			return g, err
		}
	}
	return nil, fmt.Errorf("engine: %s is not a parameter", n.Name())
}

// download copies value i's elements from its buffer, widening a 16-bit
// value.
func (prog *Program) download(i int) ([]float32, error) {
	v := prog.sched.values[i]
	words := make([]float32, v.elems)
	if err := prog.on(prog.sides.valueHost[i]).Download(words, prog.buffers[i]); err != nil {
		return nil, fmt.Errorf("engine: reading %s: %w", v.node.Name(), err)
	}
	if v.store == quantized {
		return prog.sched.dequantizedWords(i, words)
	}
	if !v.store.narrow() {
		return words, nil
	}
	out := make([]float32, prog.sched.count(i))
	unpackHalf(prog.sched.formatOf(i), out, words)
	return out, nil
}

// Run executes one step on the inputs set last: the forward pass and, when
// training, the backward pass with each block's update as soon as its
// gradients are final. It returns the output scalar. When the schedule
// accumulates gradients (Spec.Accumulate = K), a Run is one micro-batch:
// its updates add the gradients into the accumulators, and every K-th
// Run's apply Adam to their mean (accumulate.go).
func (prog *Program) Run() (float32, error) {
	if len(prog.sched.spec.Passes) > 0 {
		return 0, errors.New("engine: a schedule of passes runs them one at a time (RunPass)")
	}
	if err := prog.stopped(); err != nil {
		return 0, err
	}
	if err := prog.scaleSeed(); err != nil {
		return 0, err
	}
	if prog.micro == 0 {
		prog.overflowed = false
	}
	if err := prog.sched.walk(prog.placed, programSteps{prog}); err != nil {
		return 0, err
	}
	if prog.scalesLoss() && prog.lastMicro() {
		prog.loss.endStep(prog.overflowed)
	}
	prog.micro = (prog.micro + 1) % prog.sched.microBatches()
	if err := prog.on(prog.sides.valueHost[prog.sched.output]).Download(prog.scratch, prog.buffers[prog.sched.output]); err != nil {
		return 0, fmt.Errorf("engine: reading the output: %w", err)
	}
	return prog.scratch[0], nil
}

// RunPass executes pass p of a schedule compiled with Spec.Passes on the
// inputs set last: its output (Spec.Passes[p]) is then read with Read,
// until another pass runs. The blocks' state stays from one pass and one
// Run to the next.
func (prog *Program) RunPass(p int) error {
	if p < 0 || p >= len(prog.sched.spec.Passes) {
		return fmt.Errorf("engine: pass %d of a schedule of %d passes", p, len(prog.sched.spec.Passes))
	}
	if err := prog.stopped(); err != nil {
		return err
	}
	return prog.sched.walkPass(prog.placed, programSteps{prog}, p)
}

// programSteps is a Program's stepper: it runs the kernels and copies.
type programSteps struct{ prog *Program }

// execute runs step si and, for a parameter's gradient when training,
// takes its sum of squares while it is in cache.
func (ps programSteps) execute(si int, staged bool) error {
	prog := ps.prog
	if err := prog.stopped(); err != nil {
		return err
	}
	s := prog.steps[si]
	if err := prog.execute(si, staged); err != nil {
		return err
	}
	if i, ok := prog.sched.gradOf[s.out]; ok && prog.sched.spec.Train && !prog.sched.accumulates() { // else the accumulator's, at the update
		onHost := prog.sides.valueHost[s.out]
		g := prog.buffers[s.out]
		if prog.sched.values[s.out].store.narrow() { // the sum of the stored, rounded values
			g = prog.converter(onHost).widen(g, prog.sched.count(s.out))
		}
		prog.gradSquares[i] = prog.kernelsOn(onHost).SumSquares(g)
	}
	return nil
}

// update runs block b's update.
func (ps programSteps) update(b int) error { return ps.prog.update(b) }

// kernelsOn returns the host's kernels when onHost is set, else the
// device's.
func (prog *Program) kernelsOn(onHost bool) device.Kernels {
	if onHost {
		return prog.hk
	}
	return prog.k
}

// execute runs step si on its side (the device, or the host for a hybrid
// placement's host steps): a project op through its Launch method,
// gorgonia's gradient sum as an element-wise addition. Arguments that live
// on the other side are read from their mirrors, copied first where the
// schedule says; an output that lives on the other side is computed into
// its mirror and copied over after.
func (prog *Program) execute(si int, staged bool) error {
	s, sd := prog.steps[si], prog.sides
	for _, a := range sd.before[si] {
		if err := prog.crossCopy(a, true); err != nil {
			return err
		}
	}
	onHost := sd.stepHost[si]
	out := prog.buffers[s.out]
	switch {
	case sd.after[si]: // staged too: copied from the mirror to the staging buffer
		out = prog.mirrors[s.out]
	case staged:
		out = prog.placed.stage(s.out)
	}
	args := s.argBuffers
	for j, a := range s.args {
		args[j] = prog.buffers[a]
		if sd.valueHost[a] != onHost {
			args[j] = prog.mirrors[a]
		}
	}
	k := prog.kernelsOn(onHost)
	var rounded device.Buffer // a 16-bit output, computed in float32 first
	if c := prog.converter(onHost); c != nil {
		sc := prog.sched
		for j, a := range s.args {
			switch s.convs[j] {
			case narrowed:
				args[j] = c.narrow(args[j], sc.count(a))
			case widened:
				args[j] = c.widen(args[j], sc.count(a))
			case roundedIn:
				args[j] = c.round(args[j], sc.count(a))
			}
		}
		if sc.values[s.out].store.narrow() && !s.outAsIs {
			rounded, out = out, c.take(sc.count(s.out))
		}
	}
	var err error
	switch {
	case isGradientSum(s.op):
		k.Add(out, args[0], args[1])
	case s.quantArg >= 0:
		err = s.op.(QuantLauncher).LaunchQuant(k, prog.sched.values[s.args[s.quantArg]].qkind, out, args, s.shapes)
	case s.half16:
		err = s.op.(HalfLauncher).LaunchHalf(k, s.format, out, args, s.shapes)
	default:
		err = s.op.(DeviceOp).Launch(k, out, args, s.shapes)
	}
	if err != nil {
		return fmt.Errorf("engine: %v: %w", s.op, err)
	}
	if rounded != nil {
		k.ToHalf(rounded, out, prog.sched.count(s.out), prog.sched.format())
		out = rounded
	}
	switch {
	case staged && sd.after[si]:
		// Computed on the host for a paged-out block on the device: the
		// crossing upload goes to the staging buffer, on to the master.
		stage := prog.placed.stage(s.out)
		if err := prog.dev.Upload(stage, device.Floats(out)); err != nil {
			return fmt.Errorf("engine: copying %s to the device: %w", prog.sched.values[s.out].node.Name(), err)
		}
		return prog.placed.unstage(s.out, stage)
	case staged:
		return prog.placed.unstage(s.out, out)
	case sd.after[si]:
		return prog.crossCopy(s.out, false)
	}
	return nil
}

// update clips block b's gradient norm and applies Adam to its parameters
// on the device; walk has made the block resident.
func (prog *Program) update(b int) error {
	sc := prog.sched
	if sc.accumulates() && !prog.accumulate(b) {
		return nil
	}
	var sumSquares float64
	members := prog.layouts[b].params
	for _, i := range members {
		sumSquares += prog.gradSquares[i] // 0 for a frozen parameter
	}
	scale, ok := prog.stepScale(sumSquares)
	if !ok {
		return nil
	}
	prog.adamSteps[b]++
	onHost := prog.sides.blockHost[b]
	k := prog.kernelsOn(onHost)
	for _, i := range members {
		if sc.grads[i] < 0 { // frozen
			continue
		}
		param, grad := prog.buffers[sc.params[i]], prog.buffers[sc.grads[i]]
		c := prog.converter(onHost)
		switch {
		case sc.accumulates():
			grad = prog.accums[i]
		case sc.values[sc.grads[i]].store.narrow():
			grad = c.widen(grad, sc.count(sc.grads[i]))
		}
		if m := prog.masters[i]; m != nil {
			param = m
		}
		k.AdamStep(sc.spec.Optimizer, param, grad, prog.moments[i][0], prog.moments[i][1], scale, prog.adamSteps[b])
		if param != prog.buffers[sc.params[i]] {
			k.ToHalf(prog.buffers[sc.params[i]], param, sc.count(sc.params[i]), sc.format())
		}
	}
	return nil
}

// Window returns the number of blocks (a managed placement: pages) the
// program keeps resident at most.
func (prog *Program) Window() int { return prog.placed.window() }
