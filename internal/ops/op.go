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
	"gpuz/internal/hostmath"
)

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
	// host is the op's host math, in both element types.
	host() host
	// launch computes the op with a device's kernels.
	launch(d launchArgs) error
	// cost is the work of one launch on inputs of shapes in with output
	// shape out (see op.Cost).
	cost(in []tensor.Shape, out tensor.Shape) device.Cost
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

// name is the name of s's type with its parameters, if it has any.
func name(s Spec) string {
	v := reflect.ValueOf(s)
	if v.NumField() == 0 {
		return v.Type().Name()
	}
	return fmt.Sprintf("%s%+v", v.Type().Name(), s)
}

// op is the gorgonia.Op of a Spec: what every op answers alike. It returns
// a new value, never a pointer into an input, and overwrites no input.
type op struct{ spec Spec }

// Arity is the number of inputs in the signature.
func (o op) Arity() int { return len(o.spec.signature()) - 1 }

// ReturnsPtr is false: the op returns a new value.
func (o op) ReturnsPtr() bool { return false }

// CallsExtern is false.
func (o op) CallsExtern() bool { return false }

// OverwritesInput is -1: no input.
func (o op) OverwritesInput() int { return -1 }

// String names the op with its parameters.
func (o op) String() string { return name(o.spec) }

// WriteHash writes the op's name, parameters included, to h.
func (o op) WriteHash(h hash.Hash) { fmt.Fprint(h, o) }

// Launch computes the op on a device: with k's kernels, from argument
// buffers whose shapes are given, into out.
func (o op) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	return o.spec.launch(launchArgs{k: k, out: out, args: args, shapes: shapes})
}

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
	if err == nil {
		err = o.checkArity(len(shapes))
	}
	var s tensor.Shape
	if err == nil {
		s, err = o.spec.shape(shapes)
	}
	if err != nil {
		return nil, fmt.Errorf("%v: %w", o, err)
	}
	return s.Clone(), nil
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
			y, err = do(o.spec, values, o.spec.host().f32)
		case tensor.Float64:
			y, err = do(o.spec, values, o.spec.host().f64)
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
// an argument.
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

// host is an op's host math in float32 and float64: one generic function
// of the op's, instantiated twice by hostOf.
type host struct {
	f32 func(hostArgs[float32]) error
	f64 func(hostArgs[float64]) error
}

// hostOf binds the host math of an op, f instantiated for float32 and for
// float64, to the op's parameters s.
func hostOf[S Spec](s S, f32 func(S, hostArgs[float32]) error, f64 func(S, hostArgs[float64]) error) host {
	return host{
		f32: func(h hostArgs[float32]) error { return f32(s, h) },
		f64: func(h hostArgs[float64]) error { return f64(s, h) },
	}
}

// do runs host math f on values into a new value of the shape that s's
// shape rule gives: a gorgonia scalar for the scalar shape.
func do[T hostmath.Float](s Spec, values []gorgonia.Value, f func(hostArgs[T]) error) (gorgonia.Value, error) {
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
	shape, err := s.shape(h.shapes)
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
