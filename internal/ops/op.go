package ops

import (
	"fmt"
	"hash"
	"hash/fnv"
	"reflect"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/half"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
)

// internal/perfmodel/opclasses.go lists the ops by the class their specs
// declare (Spec.class); TestOpClasses writes it.
//go:generate go test -count=1 -run TestOpClasses . -update

// Spec is what is particular to one op; New makes it a gorgonia op. Its
// type is a struct of the op's parameters, which name it and are part of
// its hash. Only the types of this package implement it.
type Spec interface {
	// signature is the number of dimensions of each input and then of the
	// output. 0 is gorgonia's type variable a: the element type beside
	// tensors, or any tensor where every entry is 0.
	signature() []int
	// shape checks the inputs' shapes and returns the output's; the scalar
	// shape for a scalar output.
	shape(in []tensor.Shape) (tensor.Shape, error)
	// kernel is how the op computes: its host math, in both element types,
	// and its launch on a device's kernels.
	kernel() kernel
	// cost is the work of one launch on inputs of shapes in with output
	// shape out (see op.Cost).
	cost(in []tensor.Shape, out tensor.Shape) device.Cost
	// class is the op's kernel class in the performance model: one of
	// perfmodel's class names (perfmodel.ClassProducts, …,
	// perfmodel.ClassElementwise), returned as a constant. It is written
	// only here: internal/perfmodel/opclasses.go is generated from these
	// methods (TestOpClasses, make generate).
	class() string
}

// differentiable is a Spec of a forward op, whose gorgonia op is an SDOp.
type differentiable interface {
	Spec
	// grads wires the gradient of every input: nil where the op is not
	// differentiable in it.
	grads() []grad
}

// New returns the gorgonia op of s: a gorgonia.SDOp if s is a forward op
// with gradients. Both also have the Launch method that package engine
// calls.
func New(s Spec) gorgonia.Op {
	if d, ok := s.(differentiable); ok {
		return sdOp{op{d}, d}
	}
	return op{s}
}

// Apply applies the op of s to inputs in their graph.
func Apply(s Spec, inputs ...*gorgonia.Node) (*gorgonia.Node, error) {
	n, err := gorgonia.ApplyOp(New(s), inputs...)
	if err != nil {
		return nil, fmt.Errorf("applying %v: %w", name(s), err)
	}
	return n, nil
}

// name is the name of s's type with its parameters, if it has any; a
// generic spec's name is its opName (its type's would carry the type
// argument).
func name(s Spec) string {
	v := reflect.ValueOf(s)
	n := v.Type().Name()
	if g, ok := s.(generic); ok {
		n = g.opName()
	}
	if v.NumField() == 0 {
		return n
	}
	return fmt.Sprintf("%s%+v", n, s)
}

// generic is a spec of a generic type (the row normalisations'
// gradients, normgrad.go), which names its instances.
type generic interface{ opName() string }

// op is the gorgonia.Op of a Spec: what every op answers alike. Its Do
// returns a new value, never a pointer into an input, and overwrites no
// input; only a launch of an overwriter writes its input in place.
type op struct{ spec Spec }

// Arity is the number of inputs in the signature.
func (o op) Arity() int { return len(o.spec.signature()) - 1 }

// ReturnsPtr is false: the op returns a new value.
func (o op) ReturnsPtr() bool { return false }

// CallsExtern is false.
func (o op) CallsExtern() bool { return false }

// OverwritesInput is the input whose buffer the op's launch writes in
// place (the engine gives its output that input's buffer: CacheWrite's
// cache), -1 for every other op. Do still returns a new value.
func (o op) OverwritesInput() int {
	if w, ok := o.spec.(overwriter); ok {
		return w.overwrites()
	}
	return -1
}

// overwriter is a spec whose launch writes an input in place.
type overwriter interface{ overwrites() int }

// String names the op with its parameters.
func (o op) String() string { return name(o.spec) }

// WriteHash writes the op's name, parameters included, to h.
func (o op) WriteHash(h hash.Hash) { fmt.Fprint(h, o) }

// Launch computes the op on a device: with k's kernels, from argument
// buffers whose shapes are given, into out.
func (o op) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	return o.spec.kernel().launch(launchArgs{k: k, out: out, args: args, shapes: shapes})
}

// Cast is the op's class under 16-bit precision (levers.Cast): the
// spec's, or levers.CastPromote for a spec that declares none.
func (o op) Cast() levers.Cast {
	if c, ok := o.spec.(caster); ok {
		return c.cast()
	}
	return levers.CastPromote
}

// HalfOperands reports which arguments the op's 16-bit launch
// (LaunchHalf) reads as stored in 16 bits; nil when the spec has no such
// launch, and the engine widens its 16-bit arguments to float32 instead.
func (o op) HalfOperands() []bool {
	if h, ok := o.spec.(halfLauncher); ok {
		return h.halfOperands()
	}
	return nil
}

// LaunchHalf computes the op on a device from arguments that HalfOperands
// marks holding 16-bit values of format f, the others and out float32.
func (o op) LaunchHalf(k device.Kernels, f half.Format, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	h, ok := o.spec.(halfLauncher)
	if !ok {
		return fmt.Errorf("%s has no 16-bit launch", o)
	}
	return h.launchHalf(f, launchArgs{k: k, out: out, args: args, shapes: shapes})
}

// halfLauncher is a spec that reads some arguments in 16 bits as stored:
// the products, through device.Kernels.GemmHalf, and the key-value
// cache's ops, whose cache is a 16-bit state (engine.HalfLauncher).
type halfLauncher interface {
	halfOperands() []bool
	launchHalf(f half.Format, d launchArgs) error
}

// caster is a spec that declares its class under 16-bit precision, after
// autocast's op lists: products and convolutions levers.CastLower; softmax,
// layer norm, losses and sums levers.CastFP32.
type caster interface{ cast() levers.Cast }

// Hashcode is the hash of the op's name, parameters included.
func (o op) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

// Type is the signature's function type: a tensor of its dimensions per
// input and for the output, or the type variable a for 0.
func (o op) Type() hm.Type {
	sig := o.spec.signature()
	types := make([]hm.Type, len(sig))
	for i, dims := range sig {
		types[i] = hm.TypeVariable('a')
		if dims > 0 {
			types[i] = &gorgonia.TensorType{Dims: dims, Of: hm.TypeVariable('a')}
		}
	}
	return hm.NewFnType(types...)
}

// InferShape applies the shape rule to the inputs' shapes.
func (o op) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := gorgonia.DimSizersToShapes(inputs)
	var s tensor.Shape
	if err == nil {
		s, err = o.shape(shapes)
	}
	if err != nil {
		return nil, fmt.Errorf("%v: %w", o, err)
	}
	return s.Clone(), nil
}

// shape checks the number of inputs and their dimensions against the
// signature, then applies the shape rule, which so need not check them.
func (o op) shape(in []tensor.Shape) (tensor.Shape, error) {
	if err := o.checkArity(len(in)); err != nil {
		return nil, err
	}
	for i, dims := range o.spec.signature()[:len(in)] {
		if dims > 0 && len(in[i]) != dims {
			return nil, fmt.Errorf("input %d has shape %v, want %d dimensions", i, in[i], dims)
		}
	}
	return o.spec.shape(in)
}

// checkArity reports an error unless n inputs are the op's arity.
func (o op) checkArity(n int) error {
	if n != o.Arity() {
		return fmt.Errorf("expected %d inputs, got %d", o.Arity(), n)
	}
	return nil
}

// Do runs the host math in the element type of the first input.
func (o op) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	err := o.checkArity(len(values))
	var y gorgonia.Value
	if err == nil {
		switch dt := values[0].Dtype(); dt {
		case tensor.Float32:
			y, err = do(o, values, o.spec.kernel().f32)
		case tensor.Float64:
			y, err = do(o, values, o.spec.kernel().f64)
		default:
			err = fmt.Errorf("unsupported element type %v", dt)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%v: %w", o, err)
	}
	return y, nil
}

// sdOp is the gorgonia.SDOp of a forward op's Spec.
type sdOp struct {
	op
	spec differentiable
}

// DiffWRT reports the inputs that the op has gradients for.
func (o sdOp) DiffWRT(inputs int) []bool {
	grads := o.spec.grads()
	diff := make([]bool, inputs)
	for i := range min(inputs, len(grads)) {
		diff[i] = grads[i] != nil
	}
	return diff
}

// SymDiff returns the gradient nodes of the inputs, nil where the op is not
// differentiable, given the op's output and its gradient.
func (o sdOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	nodes := make(gorgonia.Nodes, len(inputs))
	for i, g := range o.spec.grads() {
		if g == nil {
			continue
		}
		n, err := g(inputs, output, grad)
		if err != nil {
			return nil, fmt.Errorf("%v: gradient of input %d: %w", o, i, err)
		}
		nodes[i] = n
	}
	return nodes, nil
}

// grad makes the gradient of one input of an op, given its inputs, its
// output and the output's gradient.
type grad func(inputs gorgonia.Nodes, output, g *gorgonia.Node) (*gorgonia.Node, error)

// The arguments of gradOf are the op's inputs by index, or these.
const (
	yArg = -1 // the op's output
	gArg = -2 // the output's gradient
)

// gradOf is the gradient that the op of s computes from args: inputs by
// index, yArg or gArg.
func gradOf(s Spec, args ...int) grad {
	return func(inputs gorgonia.Nodes, output, g *gorgonia.Node) (*gorgonia.Node, error) {
		nodes := make(gorgonia.Nodes, len(args))
		for i, a := range args {
			switch a {
			case yArg:
				nodes[i] = output
			case gArg:
				nodes[i] = g
			default:
				nodes[i] = inputs[a]
			}
		}
		return Apply(s, nodes...)
	}
}

// passGrad is the gradient that is the output's gradient itself.
func passGrad(_ gorgonia.Nodes, _, g *gorgonia.Node) (*gorgonia.Node, error) { return g, nil }

// launchArgs are what an op's launch computes with: a device's kernels, the
// output buffer, the argument buffers and their shapes. Out never aliases
// an argument, but for an overwriter's, whose out is that argument.
type launchArgs struct {
	k      device.Kernels
	out    device.Buffer
	args   []device.Buffer
	shapes []tensor.Shape
}

// hostArgs are what an op's host math computes with: the output's elements
// (one for a scalar), the inputs' elements and the inputs' shapes.
type hostArgs[T hostmath.Float] struct {
	out    []T
	in     [][]T
	shapes []tensor.Shape
}

// kernel is how an op computes: its host math and its launch on a
// device's kernels.
type kernel struct {
	host
	launch func(launchArgs) error
}

// host is an op's host math in float32 and float64: one generic function
// of the op's, instantiated twice by hostOf.
type host struct {
	f32 func(hostArgs[float32]) error
	f64 func(hostArgs[float64]) error
}

// hostOf binds the host math of an op, a generic function given twice
// (Go infers the float32 and the float64 instantiation from f32's and
// f64's types), to the op's parameters s.
func hostOf[S any](s S, f32 func(S, hostArgs[float32]) error, f64 func(S, hostArgs[float64]) error) host {
	return host{
		f32: func(h hostArgs[float32]) error { return f32(s, h) },
		f64: func(h hostArgs[float64]) error { return f64(s, h) },
	}
}

// do runs host math f on values into a new value of the shape that o's
// shape rule gives: a gorgonia scalar for the scalar shape.
func do[T hostmath.Float](o op, values []gorgonia.Value, f func(hostArgs[T]) error) (gorgonia.Value, error) {
	h := hostArgs[T]{in: make([][]T, len(values)), shapes: make([]tensor.Shape, len(values))}
	for i, v := range values {
		switch d := v.Data().(type) {
		case T:
			h.in[i] = []T{d}
		case []T:
			h.in[i] = d
		default:
			return nil, fmt.Errorf("input %d holds %T, want elements of type %T", i, d, h.out)
		}
		h.shapes[i] = v.Shape()
	}
	shape, err := o.shape(h.shapes)
	if err != nil {
		return nil, err
	}
	size := shape.TotalSize()
	if shape.IsScalar() {
		size = 1
	}
	h.out = make([]T, size)
	if err := f(h); err != nil {
		return nil, err
	}
	if shape.IsScalar() {
		return scalarValue(h.out[0]), nil
	}
	return tensor.New(tensor.WithBacking(h.out), tensor.WithShape(shape.Clone()...)), nil
}

// scalarValue wraps x as a gorgonia scalar.
func scalarValue[T hostmath.Float](x T) gorgonia.Value {
	if x32, ok := any(x).(float32); ok {
		return gorgonia.NewF32(x32)
	}
	return gorgonia.NewF64(float64(x))
}

// sized runs kernel with the sizes that size reads off shapes, or returns
// why they have none.
func sized[P any](size func([]tensor.Shape) (P, error), shapes []tensor.Shape, kernel func(P)) error {
	p, err := size(shapes)
	if err != nil {
		return err
	}
	kernel(p)
	return nil
}

// sizedKernel is the kernel of an op whose host math (f32 and f64) and
// launch compute with the sizes that size reads off the inputs' shapes.
func sizedKernel[P any](size func([]tensor.Shape) (P, error), f32 func(hostArgs[float32], P), f64 func(hostArgs[float64], P),
	launch func(launchArgs, P)) kernel {
	return kernel{
		host: host{f32: sizedHost(size, f32), f64: sizedHost(size, f64)},
		launch: func(d launchArgs) error {
			return sized(size, d.shapes, func(p P) { launch(d, p) })
		},
	}
}

// sizedHost is sizedKernel's host math in one element type.
func sizedHost[T hostmath.Float, P any](size func([]tensor.Shape) (P, error), f func(hostArgs[T], P)) func(hostArgs[T]) error {
	return func(h hostArgs[T]) error { return sized(size, h.shapes, func(p P) { f(h, p) }) }
}

// call1, call2 and call3 are the kernel of an op of one, two or three
// inputs whose host math (a generic function of package hostmath, given
// twice, as to hostOf) and device kernel (a method of device.Kernels) both
// take the output, the inputs in order and the sizes that size reads off
// the inputs' shapes.
func call1[P any](size func([]tensor.Shape) (P, error), f32 func(y, a []float32, p P), f64 func(y, a []float64, p P),
	k func(device.Kernels, device.Buffer, device.Buffer, P)) kernel {
	return sizedKernel(size, hostCall1(f32), hostCall1(f64), func(d launchArgs, p P) { k(d.k, d.out, d.args[0], p) })
}

func call2[P any](size func([]tensor.Shape) (P, error), f32 func(y, a, b []float32, p P), f64 func(y, a, b []float64, p P),
	k func(device.Kernels, device.Buffer, device.Buffer, device.Buffer, P)) kernel {
	return sizedKernel(size, hostCall2(f32), hostCall2(f64), func(d launchArgs, p P) { k(d.k, d.out, d.args[0], d.args[1], p) })
}

func call3[P any](size func([]tensor.Shape) (P, error), f32 func(y, a, b, c []float32, p P), f64 func(y, a, b, c []float64, p P),
	k func(device.Kernels, device.Buffer, device.Buffer, device.Buffer, device.Buffer, P)) kernel {
	return sizedKernel(size, hostCall3(f32), hostCall3(f64), func(d launchArgs, p P) {
		k(d.k, d.out, d.args[0], d.args[1], d.args[2], p)
	})
}

// plain1 is the kernel of an op with one input and no parameters whose
// host math and device kernel both take the output and the input, as
// GELUTanh and SumRows do.
func plain1(f32 func(y, a []float32), f64 func(y, a []float64), k func(device.Kernels, device.Buffer, device.Buffer)) kernel {
	return call1(fixed(struct{}{}),
		func(y, a []float32, _ struct{}) { f32(y, a) }, func(y, a []float64, _ struct{}) { f64(y, a) },
		func(d device.Kernels, y, a device.Buffer, _ struct{}) { k(d, y, a) })
}

// checked2 is the kernel of an op with two inputs and no parameters whose
// host math and device kernel both take the output and the inputs and
// report an error (an index out of range: the embeddings).
func checked2(f32 func(y, a, b []float32) error, f64 func(y, a, b []float64) error,
	k func(device.Kernels, device.Buffer, device.Buffer, device.Buffer) error) kernel {
	return kernel{
		host: host{
			f32: func(h hostArgs[float32]) error { return f32(h.out, h.in[0], h.in[1]) },
			f64: func(h hostArgs[float64]) error { return f64(h.out, h.in[0], h.in[1]) },
		},
		launch: func(d launchArgs) error { return k(d.k, d.out, d.args[0], d.args[1]) },
	}
}

// hostCall1, hostCall2 and hostCall3 are the host math of call1, call2
// and call3 in one element type.
func hostCall1[T hostmath.Float, P any](f func(y, a []T, p P)) func(hostArgs[T], P) {
	return func(h hostArgs[T], p P) { f(h.out, h.in[0], p) }
}

func hostCall2[T hostmath.Float, P any](f func(y, a, b []T, p P)) func(hostArgs[T], P) {
	return func(h hostArgs[T], p P) { f(h.out, h.in[0], h.in[1], p) }
}

func hostCall3[T hostmath.Float, P any](f func(y, a, b, c []T, p P)) func(hostArgs[T], P) {
	return func(h hostArgs[T], p P) { f(h.out, h.in[0], h.in[1], h.in[2], p) }
}

// fixed is the size function of sizes that do not depend on the shapes,
// such as LayerNorm's ε.
func fixed[P any](p P) func([]tensor.Shape) (P, error) {
	return func([]tensor.Shape) (P, error) { return p, nil }
}

// shapeBy is the shape rule that reads sizes off the input shapes with
// size and derives the output's shape from them with out.
func shapeBy[P any](size func([]tensor.Shape) (P, error), in []tensor.Shape, out func(P) tensor.Shape) (tensor.Shape, error) {
	p, err := size(in)
	if err != nil {
		return nil, err
	}
	return out(p), nil
}

// sameShape returns the one shape of all the given shapes.
func sameShape(in []tensor.Shape) (tensor.Shape, error) {
	for _, s := range in[1:] {
		if !s.Eq(in[0]) {
			return nil, fmt.Errorf("input shapes %v and %v differ", in[0], s)
		}
	}
	return in[0], nil
}
