package engine

import (
	"fmt"
	"math"
	"unsafe"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/half"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
)

// Caster is an op that declares its class under 16-bit precision
// (levers.Cast); the ops of package ops all are. An op that is not, and
// gorgonia's gradient sum, are levers.CastPromote.
type Caster interface {
	Cast() levers.Cast
}

// HalfLauncher is an op that reads some arguments in 16 bits as stored:
// HalfOperands marks them, nil when the op has no such launch; LaunchHalf
// runs it with those arguments 16-bit of format f and the others float32.
// A product (levers.CastLower, through device.Kernels.GemmHalf) runs it
// whenever it is 16-bit, its float32 operands rounded into 16-bit copies,
// its output float32. Any other op (the key-value cache's) takes the
// arguments it marks as they are stored: its 16-bit launch when they are
// all 16-bit, its float32 launch when none is; an output it overwrites in
// place (OverwritesInput) is then one of them, written as stored, and its
// other arguments and output are float32.
type HalfLauncher interface {
	HalfOperands() []bool
	LaunchHalf(k device.Kernels, f half.Format, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error
}

// argConversion is what a step does with one argument under 16-bit
// precision before its kernel reads it.
type argConversion uint8

const (
	asIs      argConversion = iota // read as stored: float32, or 16-bit by a 16-bit launch
	narrowed                       // float32 rounded into a 16-bit copy, for a 16-bit launch
	widened                        // 16-bit widened to float32
	roundedIn                      // float32 read by a product: rounded to 16 bits and widened back
)

// assignConversions decides, once per step, what each argument goes
// through (step.convs) and whether the step runs its 16-bit launch
// (step.half16, of step.format): a product reads 16-bit operands as stored
// where its op has a 16-bit launch (HalfLauncher), else every product
// rounds its float32 operands; another op with a 16-bit launch takes its
// marked arguments as stored when they are 16-bit; any other op widens its
// 16-bit arguments. Under fp32 (a 16-bit state only) the products stay
// float32. A 16-bit state must be taken as stored (never widened whole,
// nor written through a float32 copy): a step that cannot is an error.
func (sc *Schedule) assignConversions() error {
	for si := range sc.steps {
		s := &sc.steps[si]
		if s.quantArg >= 0 { // float32 arithmetic: 16-bit arguments widened
			s.convs = make([]argConversion, len(s.args))
			for j, a := range s.args {
				if sc.values[a].store.narrow() {
					s.convs[j] = widened
				}
			}
			s.format = sc.format()
			continue
		}
		lower := sc.spec.Precision.Half() && roundsInputs(castOf(s.op))
		direct := sc.halfOperands(s)
		s.half16 = direct != nil
		s.format = sc.format()
		s.convs = make([]argConversion, len(s.args))
		for j, a := range s.args {
			switch {
			case direct != nil && direct[j] && sc.values[a].store.narrow():
				s.convs[j] = asIs
			case direct != nil && direct[j]:
				s.convs[j] = narrowed
			case sc.values[a].store.narrow():
				s.convs[j] = widened
			case lower:
				s.convs[j] = roundedIn
			}
			if s.half16 && s.convs[j] == asIs && sc.values[a].store.narrow() {
				s.format = sc.formatOf(a)
				s.outAsIs = s.outAsIs || a == s.out
			}
		}
		for j, a := range s.args {
			if v := sc.values[a]; v.state && s.convs[j] == widened {
				return fmt.Errorf("engine: %v cannot read the %s state %s as stored", s.op, sc.formatOf(a), v.node.Name())
			}
		}
		if v := sc.values[s.out]; v.state && v.store.narrow() && !s.outAsIs {
			return fmt.Errorf("engine: %v cannot write the %s state %s as stored", s.op, sc.formatOf(s.out), v.node.Name())
		}
	}
	return nil
}

// halfOperands returns the arguments step s reads in 16 bits as stored,
// nil when it runs its float32 launch: a product's HalfOperands under a
// 16-bit precision; another op's when every argument it marks is 16-bit.
func (sc *Schedule) halfOperands(s *step) []bool {
	h, ok := s.op.(HalfLauncher)
	if !ok {
		return nil
	}
	marked := h.HalfOperands()
	if castOf(s.op) == levers.CastLower {
		if !sc.spec.Precision.Half() {
			return nil
		}
		return marked
	}
	if marked == nil {
		return nil
	}
	for j, a := range s.args {
		if marked[j] && !sc.values[a].store.narrow() {
			return nil
		}
	}
	return marked
}

// castOf returns op's class under 16-bit precision.
func castOf(op gorgonia.Op) levers.Cast {
	if c, ok := op.(Caster); ok {
		return c.Cast()
	}
	return levers.CastPromote
}

// roundsInputs reports whether an op of class c reads its float32
// arguments rounded to 16 bits: levers.CastLower and levers.CastLowerIn.
func roundsInputs(c levers.Cast) bool { return c == levers.CastLower || c == levers.CastLowerIn }

// format returns the 16-bit format of spec's precision; 0 for fp32.
func (sc *Schedule) format() half.Format { return formatOf(sc.spec.Precision) }

// formatOf returns precision p's 16-bit format; 0 for fp32.
func formatOf(p levers.Precision) half.Format {
	switch p {
	case levers.BF16:
		return half.BF16
	case levers.FP16:
		return half.FP16
	}
	return 0
}

// formatOf returns the 16-bit format of value v: a state's is
// Spec.StatePrecision's, every other's the precision's.
func (sc *Schedule) formatOf(v int) half.Format {
	if sc.values[v].state {
		return formatOf(sc.spec.StatePrecision)
	}
	return sc.format()
}

// count returns value v's number of elements, whatever its storage:
// elems is its storage in float32-sized words, which a 16-bit value
// fills two elements to a word.
func (sc *Schedule) count(v int) int { return max(sc.values[v].shape.TotalSize(), 1) }

// assignPrecision decides which values a 16-bit precision stores in 16
// bits, after automatic mixed precision's rules, and sizes their storage:
// a parameter whose every reader is a product (levers.CastLower), trained
// or frozen (a frozen one has no float32 master: stateElems); a
// product's result; a promoting op's result when all its inputs are 16-bit.
// Inputs, the gradient seed, the reductions' results and every other value
// stay float32. It runs once the steps are final (after recompute) and
// before the arena is packed. The blocks' state is stored after
// Spec.StatePrecision (assignStateStorage).
func (sc *Schedule) assignPrecision() error {
	if err := sc.assignQuantized(); err != nil {
		return err
	}
	if sc.spec.Precision.Half() {
		sc.assignHalfValues()
	}
	if sc.spec.StatePrecision.Half() {
		for v := range sc.values {
			if sc.values[v].state {
				sc.setHalf(v)
			}
		}
	}
	if !sc.spec.Precision.Half() && !sc.spec.StatePrecision.Half() {
		return nil
	}
	return sc.assignConversions()
}

// assignHalfValues marks the values a 16-bit precision stores in 16 bits
// (assignPrecision).
func (sc *Schedule) assignHalfValues() {
	// A parameter is 16-bit when some step reads it and every step that
	// does is a product.
	read, other := make([]bool, len(sc.values)), make([]bool, len(sc.values))
	for _, s := range sc.steps {
		lower := roundsInputs(castOf(s.op))
		for _, a := range s.args {
			read[a] = true
			other[a] = other[a] || !lower
		}
	}
	for _, pv := range sc.params {
		if read[pv] && !other[pv] && sc.values[pv].store != quantized {
			sc.setHalf(pv)
		}
	}
	for _, s := range sc.steps {
		switch castOf(s.op) {
		case levers.CastLower:
			sc.setHalf(s.out)
		case levers.CastPromote:
			all := true
			for _, a := range s.args {
				all = all && sc.values[a].store.narrow()
			}
			if all {
				sc.setHalf(s.out)
			}
		}
	}
}

// storage is how a value's elements sit in its buffer's float32-sized
// words. A 16-bit storage is read through a widening to float32 and
// written through a rounding from it (the converter); a quantized one is
// read only as stored (quantized.go); a value's bytes, and so the arena,
// area, copy and page, follow its words.
type storage uint8

// The storages.
const (
	// float32s stores a float32 an element.
	float32s storage = iota
	// sixteenBits stores 16 bits an element, two to a word, in the spec's
	// precision's format (bf16 or fp16), or for a block's state in
	// Spec.StatePrecision's (formatOf).
	sixteenBits
	// quantized stores a frozen weight's blocks in value.qkind
	// (Spec.Weights), whole words holding quant.Kind.Bytes.
	quantized
)

// words returns the float32-sized words n elements take.
func (s storage) words(n int) int {
	if s == sixteenBits {
		return half.Words(n)
	}
	return n
}

// narrow reports whether the storage is 16 bits: read widened, written
// rounded. A quantized value is neither (quantized.go).
func (s storage) narrow() bool { return s == sixteenBits }

// setHalf stores value v in 16 bits.
func (sc *Schedule) setHalf(v int) {
	sc.values[v].store = sixteenBits
	sc.values[v].elems = sixteenBits.words(sc.count(v))
}

// stateElems returns the float32 elements of parameter i's (of params)
// optimizer state: Adam's two moments, for a 16-bit parameter its
// float32 master, which the update changes and rounds into the 16-bit copy
// the steps read, and when the schedule accumulates gradients
// (Spec.Accumulate) its float32 accumulator, last (accumOffset); none for
// a frozen parameter.
func (sc *Schedule) stateElems(i int) int {
	pv := sc.params[i]
	if sc.values[pv].frozen { // nothing updates it: no moments, no master
		return 0
	}
	n := 2 * sc.count(pv)
	if sc.values[pv].store.narrow() {
		n += sc.count(pv)
	}
	if sc.accumulates() {
		n += sc.count(pv)
	}
	return n
}

// accumOffset returns where trained parameter i's accumulator sits in its
// optimizer state (stateElems), in elements from the state's start, -1
// when the schedule does not accumulate.
func (sc *Schedule) accumOffset(i int) int {
	if !sc.accumulates() {
		return -1
	}
	return sc.stateElems(i) - sc.count(sc.params[i])
}

// scratchElems returns the float32 elements step si converts through: each
// 16-bit argument widened, each float32 argument of a product rounded to
// 16 bits (in a 16-bit copy, then widened), and a 16-bit result computed
// in float32 before it is rounded into its buffer.
func (sc *Schedule) scratchElems(si int) int {
	if !sc.spec.Precision.Half() {
		return 0
	}
	s := sc.steps[si]
	n := 0
	for j, a := range s.args {
		switch s.convs[j] {
		case narrowed: // a 16-bit copy
			n += half.Words(sc.count(a))
		case widened:
			n += sc.count(a)
		case roundedIn: // a 16-bit copy, widened back
			n += sc.count(a) + half.Words(sc.count(a))
		}
	}
	if sc.values[s.out].store.narrow() && !s.outAsIs {
		n += sc.count(s.out)
	}
	return n
}

// scratchFor returns the float32 scratch of one side: the most elements
// one of the steps that on selects converts through, or an update widens
// a gradient into, whichever is more; 0 under fp32.
func (sc *Schedule) scratchFor(on func(si int) bool) int {
	if !sc.spec.Precision.Half() {
		return 0
	}
	n := sc.updateScratchElems()
	for si := range sc.steps {
		if on(si) {
			n = max(n, sc.scratchElems(si))
		}
	}
	return n
}

// updateScratchElems returns the float32 elements an update of a 16-bit
// gradient widens it into: the largest such gradient.
func (sc *Schedule) updateScratchElems() int {
	n := 0
	if !sc.spec.Train {
		return 0
	}
	for _, g := range sc.grads {
		if g >= 0 && sc.values[g].store.narrow() {
			n = max(n, sc.count(g))
		}
	}
	return n
}

// converter carves a step's conversions out of one side's scratch buffer.
type converter struct {
	dev  device.Device
	k    device.Kernels
	f    half.Format
	buf  device.Buffer
	used int
}

// take returns a view of n scratch elements.
func (c *converter) take(n int) device.Buffer {
	b := c.dev.View(c.buf, c.used, n)
	c.used += n
	return b
}

// widen returns a float32 copy of the n 16-bit values in b.
func (c *converter) widen(b device.Buffer, n int) device.Buffer {
	out := c.take(n)
	c.k.FromHalf(out, b, n, c.f)
	return out
}

// round returns the n float32 values of b rounded to 16 bits, as float32.
func (c *converter) round(b device.Buffer, n int) device.Buffer {
	return c.widen(c.narrow(b, n), n)
}

// narrow returns the n float32 values of b rounded to 16 bits, packed.
func (c *converter) narrow(b device.Buffer, n int) device.Buffer {
	h := c.take(half.Words(n))
	c.k.ToHalf(h, b, n, c.f)
	return h
}

// halves returns words as the 16-bit values they pack, two to a word.
func halves(words []float32) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(words))), 2*len(words))
}

// packHalf rounds data to format f into words, packed two values to a
// float32 word as a 16-bit buffer holds them: what an upload of a 16-bit
// value copies.
func packHalf(f half.Format, words, data []float32) {
	hostmath.HalfFromFloat32s(f, halves(words)[:len(data)], data)
}

// packedHalf returns data packed by packHalf in a new slice.
func packedHalf(f half.Format, data []float32) []float32 {
	words := make([]float32, half.Words(len(data)))
	packHalf(f, words, data)
	return words
}

// unpackHalf widens the len(out) values of format f packed in words into
// out.
func unpackHalf(f half.Format, out, words []float32) {
	hostmath.HalfToFloat32s(f, out, halves(words)[:len(out)])
}

// LossScale is fp16 training's dynamic loss scale, as PyTorch's GradScaler
// keeps it with its defaults: the loss's gradient is multiplied by Scale
// (from 2^16) so that small gradients survive fp16's range; a step whose
// gradients hold an infinity or a NaN is skipped and halves the scale;
// 2000 steps in a row without one double it.
type LossScale struct {
	Scale   float64
	good    int // steps in a row without an overflow
	Skipped int // steps skipped since the program was loaded
}

// The GradScaler defaults.
const (
	lossScaleInit     = 65536
	lossScaleInterval = 2000
)

// newLossScale returns the scale a program starts from.
func newLossScale() LossScale { return LossScale{Scale: lossScaleInit} }

// endStep moves the scale after a step: overflowed says whether any
// block's gradients overflowed.
func (s *LossScale) endStep(overflowed bool) {
	if overflowed {
		s.Scale /= 2
		s.good = 0
		s.Skipped++
		return
	}
	if s.good++; s.good == lossScaleInterval {
		s.Scale *= 2
		s.good = 0
	}
}

// finite reports whether a sum of squares came from finite gradients.
func finite(sumSquares float64) bool { return !math.IsInf(sumSquares, 0) && !math.IsNaN(sumSquares) }

// checkPrecision reports a precision, or a state's precision, the engine
// cannot apply.
func checkPrecision(spec Spec) error {
	if err := spec.Precision.Validate(); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if err := spec.StatePrecision.Validate(); err != nil {
		return fmt.Errorf("engine: the state's %w", err)
	}
	return nil
}

// paramIndex returns value v's index in params, -1 when v is not a
// parameter.
func (sc *Schedule) paramIndex(v int) int {
	if sc.values[v].kind != kindParam {
		return -1
	}
	for i, pv := range sc.params {
		if pv == v {
			return i
		}
	}
	return -1
}

// scalesLoss reports whether the program scales the loss: fp16 training.
func (prog *Program) scalesLoss() bool {
	return prog.sched.spec.Train && prog.sched.spec.Precision == levers.FP16
}

// LossScale returns fp16 training's loss scale and the steps it skipped;
// the zero LossScale for other programs.
func (prog *Program) LossScale() LossScale {
	if !prog.scalesLoss() {
		return LossScale{}
	}
	return prog.loss
}

// scaleSeed writes the loss scale into the gradient seed when it moved:
// every gradient is then the scaled loss's.
func (prog *Program) scaleSeed() error {
	if !prog.scalesLoss() || prog.seedScale == prog.loss.Scale {
		return nil
	}
	for i, v := range prog.sched.values {
		if v.kind == kindSeed {
			if err := prog.on(prog.sides.valueHost[i]).Upload(prog.buffers[i], []float32{float32(prog.loss.Scale)}); err != nil {
				return fmt.Errorf("engine: scaling the loss: %w", err)
			}
		}
	}
	prog.seedScale = prog.loss.Scale
	return nil
}

// converter returns the side's converter over its scratch (onHost: the
// host's), nil under fp32.
func (prog *Program) converter(onHost bool) *converter {
	side := 0
	if onHost {
		side = 1
	}
	if prog.scratch16[side] == nil {
		return nil
	}
	c := &prog.converters[side]
	*c = converter{dev: prog.on(onHost), k: prog.kernelsOn(onHost), f: prog.sched.format(), buf: prog.scratch16[side]}
	return c
}

// gradScale returns the factor a block's update multiplies its gradients
// by, from their sum of squares: the clip's scale and, under fp16
// training, the loss scale's inverse, the norm clipped being the unscaled
// gradients'. ok is false when the scaled gradients overflowed: the block
// skips its update, and the step counts as skipped.
func (prog *Program) gradScale(sumSquares float64) (scale float64, ok bool) {
	if !prog.scalesLoss() {
		return hostmath.ClipScale(sumSquares, prog.sched.spec.ClipNorm), true
	}
	if !finite(sumSquares) {
		prog.overflowed = true
		return 0, false
	}
	s := prog.loss.Scale
	return hostmath.ClipScale(sumSquares/(s*s), prog.sched.spec.ClipNorm) / s, true
}

// conversions is the work of a step's 16-bit conversions.
type conversions struct {
	device.Cost
	launches int64
}

// widenCost is the work of widening n 16-bit values: 2n bytes read, 4n
// written.
func widenCost(n int64) device.Cost {
	return device.Cost{FLOPs: n, ReadBytes: 2 * n, WriteBytes: 4 * n}
}

// narrowCost is the work of rounding n float32 values to 16 bits.
func narrowCost(n int64) device.Cost {
	return device.Cost{FLOPs: n, ReadBytes: 4 * n, WriteBytes: 2 * n}
}

// stepCost16 returns step si's work under the schedule's precision, from
// c, its float32 work: a step that reads 16-bit operands as stored (a
// product through GemmHalf) reads 2 bytes of each instead of 4, its FLOPs
// 16-bit products (half); every other step runs in float32 on widened
// copies, as c says (an op that takes a 16-bit state as stored, at the
// state's bytes: Work asks its HalfCostOp); the conversions are counted
// apart, as Execute makes them (scratchElems). Under fp32 c is returned as
// it is.
func (sc *Schedule) stepCost16(si int, c device.Cost) (device.Cost, conversions, bool) {
	var conv conversions
	if !sc.spec.Precision.Half() {
		return c, conv, false
	}
	s := sc.steps[si]
	add := func(k device.Cost) {
		conv.Cost = conv.Plus(k)
		conv.launches++
	}
	var direct16 int64 // elements read as stored in 16 bits
	for j, a := range s.args {
		n := int64(sc.count(a))
		switch s.convs[j] {
		case asIs:
			if s.half16 {
				direct16 += n
			}
		case narrowed:
			direct16 += n
			add(narrowCost(n))
		case widened:
			add(widenCost(n))
		case roundedIn:
			add(narrowCost(n))
			add(widenCost(n))
		}
	}
	if sc.values[s.out].store.narrow() && !s.outAsIs {
		add(narrowCost(int64(sc.count(s.out))))
	}
	if !s.half16 || castOf(s.op) != levers.CastLower {
		// Not a product: float32 arithmetic, and the op's cost counts the
		// arguments it takes as stored at their bytes (Work: HalfCostOp).
		return c, conv, false
	}
	// Each 16-bit operand's bytes read once at 2 bytes instead of 4.
	c.ReadBytes = max(c.ReadBytes-2*direct16, 0)
	return c, conv, true
}
