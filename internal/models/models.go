// Package models builds the workloads gpuz measures as gorgonia graphs of
// the ops in package ops: their sizes and presets, their parameters grouped
// in blocks, PyTorch's default initialisation and their synthetic data.
package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/engine"
	"gpuz/internal/ops"
	"gpuz/internal/quant"
)

// Scales name the size presets of every workload.
const (
	ScaleFull  = "full"  // the reference experiment's sizes
	ScaleSmall = "small" // the same shapes shrunk: a mode runs in a tenth of a second or less (llm: a few seconds)
	// ScaleDemo is sized to show the offload story in seconds: on a
	// simulated device of 256 MiB (sim:256MiB) cuda training fits with
	// nothing taken and runs out of memory under a take that the cache
	// mode survives (docs/sweeps.md).
	ScaleDemo = "demo"
)

// Model is a workload's graph for one batch size, ready to compile.
type Model struct {
	Graph  *gorgonia.ExprGraph
	Input  *gorgonia.Node // one batch of data
	Target *gorgonia.Node // the batch's target
	Output *gorgonia.Node // the model's prediction
	// Loss is the scalar training objective; OutputMean the scalar that
	// evaluation accumulates.
	Loss, OutputMean *gorgonia.Node
	Blocks           []engine.Block
	// Constants are inputs whose values are fixed for the model's life,
	// such as a positional table: fed once by InitParams, not per batch,
	// and made only then.
	Constants []Constant
	// init fills a parameter with its initial values, drawn from rng.
	init map[*gorgonia.Node]func(rng *rand.Rand, dst []float32)
	// dtype is the parameters' and inputs' element type: float32, but for
	// a float64 gradient check.
	dtype tensor.Dtype
	// adapters lists LoRA's adapters in the order they were added: the
	// blocks' trained parameters when LoRA is on (lora.go).
	adapters []*gorgonia.Node
	// products lists the weights that only x·Wᵀ (+ b) products read (a decoder
	// layer's projections), in the order they were added, and embedding
	// the token embedding's table: those a quantized kind may store
	// (Weights).
	products  []*gorgonia.Node
	embedding *gorgonia.Node
}

// Weights returns the storage of the weights kind stores when it is a
// quantized kind (engine.Spec.Weights), as the tools that make such
// models leave them: every weight that only a product reads (a decoder
// layer's projections; not the output head, nor a norm) and, for ggml's
// kinds, the token embedding's table too, as llama.cpp's quantizer does
// (bitsandbytes quantizes the linear layers only); nil for a float kind.
// When train is set, those weights must be frozen (LoRA's base): a trained
// weight is an error.
func (m *Model) Weights(kind quant.Kind, train bool) (map[*gorgonia.Node]quant.Kind, error) {
	if !kind.Quantized() {
		return nil, nil
	}
	if len(m.products) == 0 {
		return nil, fmt.Errorf("--weights %v: the model has no weight that only a product reads (%v covers a Llama-family decoder's projections)", kind, kind)
	}
	stored := m.products
	if kind != quant.NF4 && m.embedding != nil {
		stored = append(slices.Clip(stored), m.embedding)
	}
	w := make(map[*gorgonia.Node]quant.Kind, len(stored))
	for _, p := range stored {
		if s := p.Shape(); len(s) != 2 || kind.CheckShape(s[0], s[1]) != nil {
			continue // rows of partial blocks stay in floats, as llama.cpp's quantizer leaves them
		}
		if train && !m.frozen(p) {
			return nil, fmt.Errorf("--weights %v stores only frozen weights, and %s is trained: a quantized weight cannot be (train LoRA's adapters with --lora R)", kind, p.Name())
		}
		w[p] = kind
	}
	if len(w) == 0 {
		return nil, fmt.Errorf("--weights %v: no weight of the model has rows of whole %d-weight blocks", kind, kind.BlockWeights())
	}
	return w, nil
}

// frozen reports whether parameter p is in a block's Frozen.
func (m *Model) frozen(p *gorgonia.Node) bool {
	for _, b := range m.Blocks {
		if slices.Contains(b.Frozen, p) {
			return true
		}
	}
	return false
}

// Constant is an input node with its fixed values. The values are made
// only when InitParams sets them: a graph built to be planned or compiled
// holds its constants as shapes, so that building it costs nothing in
// their size (a rotary table of a long sequence, LoRA's placement of a
// wide layer).
type Constant struct {
	Node *gorgonia.Node
	// Values makes the constant's values, the node's shape's number of them.
	Values func() []float32
}

// newModel validates the config c and starts its graph: one batch's input, named
// input, and its target, both float32 tensors of the given shape.
func newModel(c interface{ Validate() error }, input string, shape ...int) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &Model{Graph: gorgonia.NewGraph(), init: map[*gorgonia.Node]func(*rand.Rand, []float32){}}
	m.Input = m.tensor(input, shape...)
	m.Target = m.tensor("target", shape...)
	return m, nil
}

// tensor adds a float32 tensor of the given shape to the graph.
func (m *Model) tensor(name string, shape ...int) *gorgonia.Node {
	dt := tensor.Float32
	if m.dtype != (tensor.Dtype{}) {
		dt = m.dtype
	}
	return gorgonia.NewTensor(m.Graph, dt, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name))
}

// param adds a float32 parameter of the given shape, with its initialiser,
// to the graph and to block.
func (m *Model) param(block *engine.Block, name string, init func(*rand.Rand, []float32), shape ...int) *gorgonia.Node {
	n := m.tensor(name, shape...)
	m.init[n] = init
	block.Params = append(block.Params, n)
	return n
}

// withOutput completes the model whose prediction is out: its loss, the
// loss op applied to out and the target, and the mean of out that
// evaluation accumulates.
func (m *Model) withOutput(out *gorgonia.Node, loss ops.Spec) (*Model, error) {
	m.freezeBase()
	m.Output = out
	var err error
	if m.Loss, err = ops.Apply(loss, out, m.Target); err != nil {
		return nil, fmt.Errorf("loss: %w", err)
	}
	if m.OutputMean, err = ops.Apply(ops.Mean{Dims: out.Dims()}, out); err != nil {
		return nil, fmt.Errorf("output mean: %w", err)
	}
	return m, nil
}

// Objective returns the node a program computes: the loss when it
// trains, else the output mean.
func (m *Model) Objective(train bool) *gorgonia.Node {
	if train {
		return m.Loss
	}
	return m.OutputMean
}

// Inputs returns the nodes a program is fed from outside: the batch, its
// target and the constants.
func (m *Model) Inputs() []*gorgonia.Node {
	inputs := []*gorgonia.Node{m.Input, m.Target}
	for _, c := range m.Constants {
		inputs = append(inputs, c.Node)
	}
	return inputs
}

// initBatchMax is the most values InitParams draws at once where the
// largest parameter is smaller: 256 MiB.
const initBatchMax = 64 << 20

// initBatch is how many values InitParams draws at once for a model whose
// largest parameter has largest values: one large parameter per core and
// the small ones beside them (an eighth more), at most initBatchMax, at
// least the largest parameter. The linear model's batches on two cores
// are two weights and their biases.
func initBatch(largest int) int {
	return max(largest, min(runtime.GOMAXPROCS(0)*largest+largest/8, initBatchMax))
}

// InitParams draws every parameter's initial values and hands each to
// set, in the model's order; then it hands set every constant's values.
// The parameters' values depend only on seed and on the parameter's
// position in the model: each has a random stream of its own, so a batch
// of consecutive parameters is drawn in parallel, one per core, into one
// reused buffer (initBatch), and no second copy of the whole model is
// held.
func (m *Model) InitParams(seed uint64, set func(param *gorgonia.Node, values []float32) error) error {
	largest := 0
	for _, p := range m.paramOrder() {
		largest = max(largest, p.Shape().TotalSize())
	}
	return m.initParams(seed, initBatch(largest), set)
}

// initParams is InitParams drawing batches of at most batchFloats values
// beside the largest parameter.
func (m *Model) initParams(seed uint64, batchFloats int, set func(param *gorgonia.Node, values []float32) error) error {
	params := m.paramOrder()
	var buf []float32
	for first := 0; first < len(params); {
		// The batch: params[first:last], at least one.
		last, total := first, 0
		for last < len(params) {
			n := params[last].Shape().TotalSize()
			if last > first && total+n > batchFloats {
				break
			}
			total += n
			last++
		}
		if cap(buf) < total {
			buf = make([]float32, total)
		}
		// One goroutine per parameter: the runtime runs GOMAXPROCS at once.
		values := make([][]float32, last-first)
		var wg sync.WaitGroup
		at := 0
		for i, p := range params[first:last] {
			n := p.Shape().TotalSize()
			v, stream := buf[at:at+n:at+n], uint64(first+i)
			values[i], at = v, at+n
			wg.Go(func() { m.init[p](rand.New(rand.NewPCG(seed, stream)), v) })
		}
		wg.Wait()
		for i, p := range params[first:last] {
			if err := set(p, values[i]); err != nil {
				return fmt.Errorf("initialising %s: %w", p.Name(), err)
			}
		}
		first = last
	}
	for _, c := range m.Constants {
		if err := set(c.Node, c.Values()); err != nil {
			return fmt.Errorf("setting %s: %w", c.Node.Name(), err)
		}
	}
	return nil
}

// paramOrder returns every parameter in the order InitParams draws them:
// the model's own, block by block as declared, then LoRA's adapters, so
// that a parameter's random stream (its position) is the same with LoRA
// as without.
func (m *Model) paramOrder() []*gorgonia.Node {
	var params []*gorgonia.Node
	for _, b := range m.Blocks {
		for _, p := range slices.Concat(b.Params, b.Frozen) {
			if !slices.Contains(m.adapters, p) {
				params = append(params, p)
			}
		}
	}
	return append(params, m.adapters...)
}

// ParamCount returns the number of parameters, trained and frozen.
func (m *Model) ParamCount() int64 {
	var n int64
	for _, p := range m.paramOrder() {
		n += int64(p.Shape().TotalSize())
	}
	return n
}

// TrainedCount returns the number of parameters that training changes:
// every parameter, or LoRA's adapters alone when it is on.
func (m *Model) TrainedCount() int64 {
	var n int64
	for _, b := range m.Blocks {
		for _, p := range b.Params {
			n += int64(p.Shape().TotalSize())
		}
	}
	return n
}

// uniform returns an initialiser drawing from U(−bound, bound), as PyTorch's
// kaiming-uniform weights (a = √5) and fan-in biases do with
// bound = 1/√fan_in.
func uniform(bound float64) func(*rand.Rand, []float32) {
	return func(rng *rand.Rand, dst []float32) {
		for i := range dst {
			dst[i] = float32((rng.Float64()*2 - 1) * bound)
		}
	}
}

// fanInBound is 1/√fanIn, the bound of PyTorch's default Linear and Conv2d
// initialisation for both weights and biases.
func fanInBound(fanIn int) float64 { return 1 / math.Sqrt(float64(fanIn)) }

// Data is a workload's synthetic data set: samples rows of rowLen values,
// and their targets where they differ from the rows themselves.
type Data struct {
	Samples, RowLen int
	Values          []float32
	// Targets holds each row's target, as many values as Values; nil when
	// the target is the row itself.
	Targets []float32
}

// Batch returns rows [i·batch, (i+1)·batch).
func (d Data) Batch(i, batch int) []float32 {
	return d.Values[i*batch*d.RowLen : (i+1)*batch*d.RowLen]
}

// TargetBatch returns the targets of rows [i·batch, (i+1)·batch): the rows
// themselves when the data has no targets of its own.
func (d Data) TargetBatch(i, batch int) []float32 {
	if d.Targets == nil {
		return d.Batch(i, batch)
	}
	return d.Targets[i*batch*d.RowLen : (i+1)*batch*d.RowLen]
}

// uniformData draws samples × rowLen values from U(0, 1), as torch.rand.
func uniformData(seed uint64, samples, rowLen int) Data {
	rng := rand.New(rand.NewPCG(seed, math.MaxUint64))
	d := Data{Samples: samples, RowLen: rowLen, Values: make([]float32, samples*rowLen)}
	for i := range d.Values {
		d.Values[i] = rng.Float32()
	}
	return d
}
