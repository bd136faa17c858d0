// Package engine compiles a gorgonia expression graph built from the ops of
// package ops into a Schedule, and runs the Schedule as a Program on a Device.
//
// gorgonia builds the graph and derives its gradients; the engine, not
// gorgonia's TapeMachine, executes it. Compile walks the sorted graph, keeps
// only what the requested output and gradients need, gives every
// intermediate value a slot of device memory by liveness, and schedules each
// block's optimizer update right after the block's gradients are final. The
// Schedule knows the bytes it needs before anything is allocated; Load allocates
// them once, and every step reuses them.
package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/half"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/quant"
)

// Block is a named group of parameters: the unit that moves between host and
// device and that owns one optimizer.
type Block struct {
	Name   string
	Params []*gorgonia.Node
	// Frozen holds the block's frozen parameters (LoRA's base weights):
	// the steps read them as any parameter, but no gradient is computed
	// for them (the gradient still flows through them to earlier values),
	// no optimizer state is kept and no update changes them. Under a
	// 16-bit precision they are stored as its other parameters are, with
	// no float32 master (precision.go: assignPrecision, stateElems).
	Frozen []*gorgonia.Node
	// State holds the block's state (a decoder layer's key-value cache):
	// values that belong to the block as its parameters do (in its area,
	// resident, paged or on the host with it) and keep their contents
	// from one Run to the next, but have no gradient, no optimizer state
	// and no update; only a step whose op overwrites its input in place
	// (gorgonia.Op.OverwritesInput) changes one, and a paged block it
	// changes is written back when evicted. Evaluation only.
	State []*gorgonia.Node
}

// Trained reports whether the block has parameters that training changes.
func (b Block) Trained() bool { return len(b.Params) > 0 }

// Spec says what to compile.
type Spec struct {
	// Inputs are the data nodes fed before every step, such as the batch and
	// its target.
	Inputs []*gorgonia.Node
	// Blocks hold every parameter, each in exactly one block.
	Blocks []Block
	// Output is the scalar the program computes each step: the loss when
	// training, any scalar summary of the output when evaluating.
	Output *gorgonia.Node
	// Train adds the backward pass and, after each block's gradients are
	// final, a clip of the block's gradient norm to ClipNorm and an Adam
	// update.
	Train     bool
	Optimizer hostmath.Adam
	ClipNorm  float64
	// RetainGradients keeps every parameter's gradient readable after a step
	// (Program.Gradient); otherwise a gradient's memory is reused once its
	// block is updated.
	RetainGradients bool
	// Accumulate, when training and above 1, is the micro-batches of one
	// optimizer step (gradient accumulation): a Run computes one
	// micro-batch's gradients and, at each block's update, adds them into
	// the block's accumulators (one float32 buffer per trained parameter,
	// kept with Adam's moments: stateElems); the Accumulate-th Run then
	// clips and applies Adam to their mean (the sum scaled by
	// 1/Accumulate, folded into the update's gradient scale), so that the
	// step is the one of a batch Accumulate times the graph's. 0 and 1
	// update every Run.
	Accumulate int
	// Recompute, when training, keeps only each block's input for the
	// backward pass and runs the block's forward steps again just before
	// its gradients (see recompute.go); "" is levers.RecomputeNone.
	Recompute levers.Recompute
	// Passes, when set, split an evaluation into passes that a Program
	// runs one at a time (RunPass), in place of Output: pass p computes
	// Passes[p], a tensor read after it with Program.Read, and only the
	// steps it needs. The passes share the parameters, the blocks' state
	// and the inputs, but no computed value (generation's prefill and
	// decode passes over one set of weights and key-value caches).
	Passes []*gorgonia.Node
	// Precision, when 16-bit, stores the products' operands and results
	// in 16 bits after automatic mixed precision's rules (precision.go);
	// training keeps float32 masters of the 16-bit parameters with Adam's
	// moments, and fp16 scales the loss dynamically. "" is levers.FP32.
	Precision levers.Precision
	// StatePrecision, when 16-bit, stores the blocks' state (Block.State:
	// the key-value caches) in 16 bits of its format, whatever Precision
	// is: only a step whose op takes its state as stored (HalfLauncher)
	// may read or write such a state, which is never widened whole. ""
	// is levers.FP32.
	StatePrecision levers.Precision
	// Weights stores the parameters it names in a quantized kind
	// (quant.Kind.Quantized: ggml's blocks or NF4), whatever Precision
	// is: a matrix [rows, cols] whose rows are whole blocks, never trained
	// (a frozen parameter, or any parameter of a spec that does not
	// train), read only by steps whose op takes it as stored
	// (QuantLauncher), never widened whole (quantized.go).
	Weights map[*gorgonia.Node]quant.Kind
}

// valueKind says where a value's memory comes from.
type valueKind int

const (
	kindInput     valueKind = iota // fed by the caller each step
	kindParam                      // a parameter, resident for the program's life
	kindSeed                       // the constant 1 that seeds backpropagation
	kindTemporary                  // computed by a step, at its offset in the arena
	kindSaved                      // computed in the forward pass, read in the backward pass: kept with its block
)

// value is one node's tensor in the schedule.
type value struct {
	node  *gorgonia.Node
	kind  valueKind
	shape tensor.Shape
	// elems is the value's storage in float32-sized words: its number of
	// elements, or fewer (store.words) when it is stored narrower.
	elems int
	// store is how the value's elements sit in its words: float32, 16
	// bits in the format of the spec's precision, or quantized in qkind.
	store storage
	qkind quant.Kind
	// frozen marks a frozen parameter (Block.Frozen), state a block's
	// state (Block.State): both kindParam.
	frozen, state bool
	offset        int // the place in the arena, in elements, of a temporary
	// block owns the value: for parameters their block, for saved values
	// the block they travel with; -1 otherwise.
	block int
	// produced is the step that computes the value (-1 for inputs and
	// parameters), lastUse the last step that reads it (len(steps) when it
	// must outlive the step, -1 when nothing reads it).
	produced, lastUse int
}

// step is one op applied to values.
type step struct {
	op   gorgonia.Op
	node *gorgonia.Node // the graph's node it computes
	args []int          // value indices, in argument order
	out  int            // value index
	// reads lists the blocks whose parameters the step reads.
	reads []int
	// backward is set for steps of the backward pass.
	backward bool
	// rerun is set for a forward step run again in the backward pass, as
	// recompute schedules it (recompute.go).
	rerun bool
	// Under 16-bit precision (precision.go), convs says what each argument
	// goes through before the kernel reads it, and half16 that the step
	// runs its op's 16-bit launch, format its format; nil, false and 0
	// when nothing is 16-bit. outAsIs marks a step that writes its 16-bit
	// output as stored: an op that overwrites a 16-bit state in place.
	convs   []argConversion
	half16  bool
	format  half.Format
	outAsIs bool
	// quantArg is the argument the step reads stored quantized
	// (quantized.go), through its op's LaunchQuant; -1 for none.
	quantArg int
}

// update is the optimizer step of one block, run after a compute step.
type update struct {
	block int
	after int // index of the compute step it follows
}

// Schedule is a compiled graph: the steps in order, the memory each value lives
// in and when each block is updated. It holds no device memory.
type Schedule struct {
	spec    Spec
	values  []value
	index   map[*gorgonia.Node]int
	steps   []step
	updates []update
	arena   int // the arena's elements: every temporary at its offset
	// needs lists, per step, the blocks that must be resident on the device
	// for it: those whose parameters it reads and those owning the saved
	// values it reads or writes.
	needs [][]int
	// order is the order in which the forward and the backward pass first
	// need each block: what a cache policy observes.
	order [2][]int
	// saved lists each block's saved values.
	saved [][]int
	// gradOf maps a gradient's value index to its parameter's index in
	// params.
	gradOf map[int]int
	output int // value index of the output
	// grads holds the value index of each parameter's gradient, in the
	// order of params; -1 for a frozen parameter, which has none.
	grads  []int
	params []int // value indices of parameters, block by block, each block's trained ones first, its state last
	// passes holds each pass's steps, [from, to), under Spec.Passes; one
	// pass of every step otherwise.
	passes [][2]int
}

// Compile turns the graph around spec.Output into a Schedule. With spec.Train it
// adds the gradient graph to spec.Output's graph through
// gorgonia.Backpropagate, so a graph can be compiled for training once.
func Compile(spec Spec) (*Schedule, error) {
	outputs, err := checkOutputs(spec)
	if err != nil {
		return nil, err
	}
	targets := slices.Clone(outputs)
	g := outputs[0].Graph()
	sc := &Schedule{spec: spec, index: map[*gorgonia.Node]int{}}

	var params gorgonia.Nodes // the trained ones, which gradients are derived for
	for b, blk := range spec.Blocks {
		frozen, state := len(blk.Params), len(blk.Params)+len(blk.Frozen)
		for j, n := range slices.Concat(blk.Params, blk.Frozen, blk.State) {
			if _, dup := sc.index[n]; dup {
				return nil, fmt.Errorf("engine: parameter %s is in more than one block", n.Name())
			}
			v := sc.addValue(n, kindParam, b)
			sc.params = append(sc.params, v)
			switch {
			case j >= state:
				sc.values[v].state = true
			case j >= frozen:
				sc.values[v].frozen = true
			default:
				params = append(params, n)
			}
		}
	}
	for _, n := range spec.Inputs {
		if _, dup := sc.index[n]; dup {
			return nil, fmt.Errorf("engine: input %s is also a parameter or listed twice", n.Name())
		}
		sc.addValue(n, kindInput, -1)
	}

	var grads gorgonia.Nodes
	if spec.Train {
		seed := gorgonia.NewScalar(g, spec.Output.Dtype(), gorgonia.WithName("gpuz.seed"))
		sc.addValue(seed, kindSeed, -1)
		if len(params) == 0 {
			return nil, errors.New("engine: training with every parameter frozen")
		}
		if grads, err = gorgonia.Backpropagate(gorgonia.Nodes{spec.Output}, gorgonia.Nodes{seed}, params); err != nil {
			return nil, fmt.Errorf("engine: deriving gradients: %w", err)
		}
		targets = append(targets, grads...)
	}

	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return nil, fmt.Errorf("engine: sorting the graph: %w", err)
	}
	slices.Reverse(sorted)
	needed := neededNodes(g, targets)
	backward := map[*gorgonia.Node]bool{}
	for _, n := range sorted {
		if !needed[n] {
			continue
		}
		if n.Op() == nil {
			if _, known := sc.index[n]; !known {
				return nil, fmt.Errorf("engine: node %s is neither an input nor a parameter", n.Name())
			}
			continue
		}
		if err := checkOp(n); err != nil {
			return nil, err
		}
		s := step{op: n.Op(), node: n}
		for _, c := range children(g, n) {
			i, ok := sc.index[c]
			if !ok {
				return nil, fmt.Errorf("engine: %v reads %s before it is computed", n.Op(), c.Name())
			}
			s.args = append(s.args, i)
			if b := sc.values[i].block; b >= 0 && !slices.Contains(s.reads, b) {
				s.reads = append(s.reads, b)
			}
			if sc.values[i].kind == kindSeed || backward[c] {
				s.backward = true
			}
		}
		if s.out, err = sc.outputOf(n, s.args); err != nil {
			return nil, err
		}
		backward[n] = s.backward
		sc.steps = append(sc.steps, s)
	}
	sc.hoistForwardSteps()
	if err := sc.splitPasses(g); err != nil {
		return nil, err
	}
	sc.output = sc.index[outputs[len(outputs)-1]]
	sc.gradOf = map[int]int{}
	if spec.Train {
		for i, pv := range sc.params {
			if sc.values[pv].frozen {
				sc.grads = append(sc.grads, -1)
				continue
			}
			gv := sc.index[grads[0]]
			grads = grads[1:]
			sc.grads = append(sc.grads, gv)
			sc.gradOf[gv] = i
		}
	}
	if err := spec.Recompute.Validate(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if err := checkAccumulate(spec); err != nil {
		return nil, err
	}
	if spec.Train && spec.Recompute.On() {
		sc.recompute()
	}
	if err := checkPrecision(spec); err != nil {
		return nil, err
	}
	if err := sc.assignPrecision(); err != nil {
		return nil, err
	}
	if spec.Train {
		sc.scheduleUpdates()
	}
	sc.computeLastUse()
	sc.assignOwners()
	sc.assignOffsets()
	if sc.passes == nil { // after recompute's steps
		sc.passes = [][2]int{{0, len(sc.steps)}}
	}
	return sc, nil
}

// checkAccumulate refuses an accumulation that is negative, or above 1
// without training or with passes.
func checkAccumulate(spec Spec) error {
	switch {
	case spec.Accumulate < 0:
		return fmt.Errorf("engine: accumulating over %d micro-batches", spec.Accumulate)
	case spec.Accumulate > 1 && (!spec.Train || len(spec.Passes) > 0):
		return errors.New("engine: only training accumulates gradients")
	}
	return nil
}

// microBatches returns the Runs of one optimizer step: Spec.Accumulate,
// at least 1.
func (sc *Schedule) microBatches() int { return max(sc.spec.Accumulate, 1) }

// accumulates reports whether the schedule accumulates gradients over
// more than one Run.
func (sc *Schedule) accumulates() bool { return sc.microBatches() > 1 }

// MicroBatches returns the Runs of one optimizer step (Spec.Accumulate,
// at least 1).
func (sc *Schedule) MicroBatches() int { return sc.microBatches() }

// hoistForwardSteps moves every forward step that the graph's order puts
// among the backward steps to just after the last step that computes one
// of its arguments: a value the gradient wiring derives from forward values
// only (the fused attention's log-sum-exps, copied out of its packed
// value) is then computed in the forward pass, and what it reads need not
// outlive the forward pass for it. The order stays topological: the step's
// arguments are computed before it, and its readers come after where it
// was.
func (sc *Schedule) hoistForwardSteps() {
	steps := make([]step, 0, len(sc.steps))
	inBackward := false
	for _, s := range sc.steps {
		if s.backward || !inBackward {
			inBackward = inBackward || s.backward
			steps = append(steps, s)
			continue
		}
		at := 0
		for i, done := range steps {
			if slices.Contains(s.args, done.out) {
				at = i + 1
			}
		}
		steps = slices.Insert(steps, at, s)
	}
	sc.steps = steps
}

// checkOutputs returns what spec computes: its scalar Output, or its
// Passes' outputs, for an evaluation only.
func checkOutputs(spec Spec) (gorgonia.Nodes, error) {
	hasState := slices.ContainsFunc(spec.Blocks, func(b Block) bool { return len(b.State) > 0 })
	switch {
	case len(spec.Passes) > 0 && spec.Output != nil:
		return nil, errors.New("engine: a spec with passes has no Output")
	case len(spec.Passes) > 0 && spec.Train:
		return nil, errors.New("engine: passes are for evaluation only")
	case hasState && spec.Train:
		return nil, errors.New("engine: a block's state is for evaluation only")
	case len(spec.Passes) > 0:
		return spec.Passes, nil
	case spec.Output == nil || !spec.Output.IsScalar():
		return nil, errors.New("engine: the output must be a scalar node")
	}
	return gorgonia.Nodes{spec.Output}, nil
}

// outputOf returns the value that node n's step computes, with args its
// arguments: a new temporary, or, for an op that overwrites an input in
// place (a key-value cache's write), that input, which must be a block's
// state: the step writes the state's own buffer, and a step that reads n
// reads the state as written.
func (sc *Schedule) outputOf(n *gorgonia.Node, args []int) (int, error) {
	_, ours := n.Op().(DeviceOp) // not gorgonia's gradient sum, whose OverwritesInput is 0
	j := n.Op().OverwritesInput()
	if !ours || j < 0 {
		return sc.addValue(n, kindTemporary, -1), nil
	}
	if j >= len(args) || !sc.values[args[j]].state {
		return 0, fmt.Errorf("engine: %v overwrites its input %d, which is not a block's state", n.Op(), j)
	}
	sc.index[n] = args[j]
	return args[j], nil
}

// splitPasses orders the steps pass by pass under Spec.Passes, each pass
// the steps its output needs, and records each pass's steps (without
// passes, Compile records one pass of every step once recompute has added
// its own). A step two passes need is an error: its value would have to
// outlive its pass.
func (sc *Schedule) splitPasses(g *gorgonia.ExprGraph) error {
	if len(sc.spec.Passes) == 0 {
		return nil // one pass, of every step: Compile records it last
	}
	passOf := map[*gorgonia.Node]int{}
	for p, out := range sc.spec.Passes {
		for n := range neededNodes(g, gorgonia.Nodes{out}) {
			if n.Op() == nil {
				continue // an input, a parameter or a state: shared
			}
			if q, ok := passOf[n]; ok && q != p {
				return fmt.Errorf("engine: passes %d and %d both need %s", q, p, n.Name())
			}
			passOf[n] = p
		}
	}
	steps := make([]step, 0, len(sc.steps))
	sc.passes = make([][2]int, len(sc.spec.Passes))
	for p := range sc.spec.Passes {
		from := len(steps)
		for _, s := range sc.steps {
			if passOf[s.node] == p {
				steps = append(steps, s)
			}
		}
		sc.passes[p] = [2]int{from, len(steps)}
	}
	sc.steps = steps
	return nil
}

func (sc *Schedule) addValue(n *gorgonia.Node, kind valueKind, block int) int {
	if i, ok := sc.index[n]; ok {
		return i
	}
	s := n.Shape()
	sc.values = append(sc.values, value{node: n, kind: kind, shape: s, elems: max(s.TotalSize(), 1), block: block, offset: -1, produced: -1, lastUse: -1})
	sc.index[n] = len(sc.values) - 1
	return len(sc.values) - 1
}

// children returns the inputs of n in argument order.
func children(g *gorgonia.ExprGraph, n *gorgonia.Node) []*gorgonia.Node {
	var out []*gorgonia.Node
	it := g.From(n.ID())
	for it.Next() {
		out = append(out, it.Node().(*gorgonia.Node))
	}
	return out
}

// neededNodes marks every node that the targets depend on.
func neededNodes(g *gorgonia.ExprGraph, targets gorgonia.Nodes) map[*gorgonia.Node]bool {
	needed := map[*gorgonia.Node]bool{}
	stack := slices.Clone(targets)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if needed[n] {
			continue
		}
		needed[n] = true
		stack = append(stack, children(g, n)...)
	}
	return needed
}

// checkOp reports an op the engine cannot run: one that is neither a
// DeviceOp nor gorgonia's gradient sum.
func checkOp(n *gorgonia.Node) error {
	if _, ok := n.Op().(DeviceOp); ok || isGradientSum(n.Op()) {
		return nil
	}
	return fmt.Errorf("engine: op %v is not supported; build graphs from package ops", n.Op())
}

// isGradientSum reports whether op is gorgonia's element-wise addition, which
// Backpropagate inserts to sum the gradients of a node with several
// consumers. Built-in op types are unexported: the op's text and arity are
// what identify it.
func isGradientSum(op gorgonia.Op) bool {
	return op.Arity() == 2 && strings.HasPrefix(op.String(), "+ ")
}

// scheduleUpdates places each block's optimizer update after the last step
// that produces one of its gradients or reads one of its parameters, so an
// update never changes a weight that a later step of the same pass reads.
func (sc *Schedule) scheduleUpdates() {
	last := make([]int, len(sc.spec.Blocks))
	gradBlock := map[int]int{}
	for i, gv := range sc.grads {
		if gv >= 0 {
			gradBlock[gv] = sc.values[sc.params[i]].block
		}
	}
	for si, s := range sc.steps {
		for _, b := range s.reads {
			last[b] = max(last[b], si)
		}
		if b, ok := gradBlock[s.out]; ok {
			last[b] = max(last[b], si)
		}
	}
	for b, after := range last {
		if sc.spec.Blocks[b].Trained() { // a wholly frozen block has no update
			sc.updates = append(sc.updates, update{block: b, after: after})
		}
	}
	slices.SortStableFunc(sc.updates, func(a, b update) int { return a.after - b.after })
}

// computeLastUse records for every value the step that produces it and the
// last step that reads it. Gradients live until their block's update; the
// output, and gradients kept on request, live to the end of the step.
func (sc *Schedule) computeLastUse() {
	end := len(sc.steps)
	for si, s := range sc.steps {
		sc.values[s.out].produced = si
		for _, a := range s.args {
			sc.values[a].lastUse = si
		}
	}
	for i, gv := range sc.grads {
		if gv < 0 {
			continue
		}
		sc.values[gv].lastUse = max(sc.values[gv].lastUse, sc.updateStep(sc.values[sc.params[i]].block))
		if sc.spec.RetainGradients {
			sc.values[gv].lastUse = end
		}
	}
	sc.values[sc.output].lastUse = end
	for _, n := range sc.spec.Passes {
		sc.values[sc.index[n]].lastUse = end
	}
}

// assignOffsets places every temporary at an offset of the arena by
// liveness (packArena): a value's elements are reused once the last
// reader of its value has run. Saved values live in their block's area
// instead.
func (sc *Schedule) assignOffsets() {
	offset, elems := sc.packArena(func(int) bool { return true })
	for i, at := range offset {
		if at >= 0 {
			sc.values[i].offset = at
		}
	}
	sc.arena = elems
}

// updateStep returns the compute step after which block b is updated.
func (sc *Schedule) updateStep(b int) int {
	for _, u := range sc.updates {
		if u.block == b {
			return u.after
		}
	}
	return -1
}

// Bytes is the memory a schedule needs with every block resident, by kind.
type Bytes struct {
	Parameters int64 // every block's trained parameters
	Frozen     int64 // every block's frozen parameters (Block.Frozen)
	State      int64 // every block's state (Block.State: the key-value caches)
	// Optimizer is Adam's two moments per parameter when training, with
	// the float32 master of each 16-bit parameter and, when accumulating
	// (Spec.Accumulate), each trained parameter's float32 accumulator.
	Optimizer int64
	Saved     int64 // activations saved for the backward pass
	Inputs    int64 // one batch of data and target
	// Arena is the other activations, gradients and temporaries, reused by
	// liveness, and under 16-bit precision the float32 scratch the steps
	// convert through.
	Arena int64
}

// Total is the sum of all kinds.
func (b Bytes) Total() int64 {
	return b.Parameters + b.Frozen + b.State + b.Optimizer + b.Saved + b.Inputs + b.Arena
}

// Bytes returns the memory the schedule needs, known before allocating any.
func (sc *Schedule) Bytes() Bytes {
	var b Bytes
	for _, v := range sc.values {
		switch v.kind {
		case kindParam:
			switch {
			case v.frozen:
				b.Frozen += 4 * int64(v.elems)
			case v.state:
				b.State += 4 * int64(v.elems)
			default:
				b.Parameters += 4 * int64(v.elems)
			}
		case kindSaved:
			b.Saved += 4 * int64(v.elems)
		case kindInput, kindSeed:
			b.Inputs += 4 * int64(v.elems)
		}
	}
	if sc.spec.Train {
		for i := range sc.params {
			b.Optimizer += 4 * int64(sc.stateElems(i))
		}
	}
	b.Arena += 4 * int64(sc.arena)
	b.Arena += 4 * int64(sc.scratchFor(func(int) bool { return true }))
	return b
}

// GradientBytes returns the bytes of all parameters' gradients. They live
// in the arena, each from its computation to its block's update.
func (sc *Schedule) GradientBytes() int64 {
	var n int64
	for _, g := range sc.grads {
		if g >= 0 {
			n += 4 * int64(sc.values[g].elems)
		}
	}
	return n
}

// Steps returns the number of compute steps.
func (sc *Schedule) Steps() int { return len(sc.steps) }

// Updates returns the number of optimizer updates a Run makes: when
// training, one per block with trained parameters; none otherwise.
func (sc *Schedule) Updates() int { return len(sc.updates) }
