package engine

import (
	"errors"
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/kernels"
	"gpuz/internal/ops"
)

// boundStep is a step with its device buffers and argument shapes resolved
// at load time, so that running it allocates nothing.
type boundStep struct {
	step
	argBuffers []device.Buffer
	shapes     []tensor.Shape
}

// Program is a Plan loaded on a device: every buffer it needs is allocated
// once, and each Run reuses them.
type Program struct {
	plan      *Plan
	dev       device.Device
	k         device.Kernels
	buffers   []device.Buffer // per value: its own buffer or a view of its slot
	owned     []device.Buffer // what Close frees
	moments   [][2]device.Buffer
	steps     []boundStep
	adamSteps []int // Adam steps taken, per block
	scratch   []float32
}

// Load allocates the plan's memory on dev. On error, including the device
// running out of memory, nothing stays allocated.
func (p *Plan) Load(dev device.Device) (prog *Program, err error) {
	prog = &Program{plan: p, dev: dev, k: dev.Kernels(), buffers: make([]device.Buffer, len(p.values)), adamSteps: make([]int, len(p.spec.Blocks))}
	defer func() {
		if err != nil {
			prog.Close()
			prog = nil
		}
	}()
	alloc := func(n int) (device.Buffer, error) {
		b, err := dev.Alloc(n)
		if err != nil {
			return nil, err
		}
		prog.owned = append(prog.owned, b)
		return b, nil
	}
	for i, v := range p.values {
		if v.kind == kindTemporary {
			continue
		}
		if prog.buffers[i], err = alloc(v.elems); err != nil {
			return nil, fmt.Errorf("engine: allocating %s: %w", v.node.Name(), err)
		}
		if v.kind == kindSeed {
			if err := dev.Upload(prog.buffers[i], []float32{1}); err != nil {
				return nil, fmt.Errorf("engine: setting the gradient seed: %w", err)
			}
		}
	}
	if p.spec.Train {
		prog.moments = make([][2]device.Buffer, len(p.params))
		for i, pv := range p.params {
			for j := range 2 {
				if prog.moments[i][j], err = alloc(p.values[pv].elems); err != nil {
					return nil, fmt.Errorf("engine: allocating optimizer state: %w", err)
				}
			}
		}
	}
	slots := make([]device.Buffer, len(p.slots))
	for i, n := range p.slots {
		if slots[i], err = alloc(n); err != nil {
			return nil, fmt.Errorf("engine: allocating activations: %w", err)
		}
	}
	for i, v := range p.values {
		if v.kind == kindTemporary {
			prog.buffers[i] = dev.View(slots[v.slot], 0, v.elems)
		}
	}
	prog.steps = make([]boundStep, len(p.steps))
	for i, s := range p.steps {
		b := boundStep{step: s, argBuffers: make([]device.Buffer, len(s.args)), shapes: make([]tensor.Shape, len(s.args))}
		for j, a := range s.args {
			b.argBuffers[j], b.shapes[j] = prog.buffers[a], p.values[a].shape
		}
		prog.steps[i] = b
	}
	return prog, nil
}

// Close frees the program's device memory.
func (prog *Program) Close() {
	for _, b := range prog.owned {
		prog.dev.Free(b)
	}
	prog.owned = nil
}

// SetInput copies data into the buffer of an input or parameter node.
func (prog *Program) SetInput(n *gorgonia.Node, data []float32) error {
	i, ok := prog.plan.index[n]
	if !ok || prog.plan.values[i].kind == kindTemporary || prog.plan.values[i].kind == kindSeed {
		return fmt.Errorf("engine: %s is not an input or parameter of the program", n.Name())
	}
	if err := prog.dev.Upload(prog.buffers[i], data); err != nil {
		return fmt.Errorf("engine: setting %s: %w", n.Name(), err)
	}
	return nil
}

// Read copies the current value of an input or parameter node into a new
// slice.
func (prog *Program) Read(n *gorgonia.Node) ([]float32, error) {
	i, ok := prog.plan.index[n]
	if !ok || prog.plan.values[i].kind == kindTemporary {
		return nil, fmt.Errorf("engine: %s is not an input or parameter of the program", n.Name())
	}
	return prog.download(i)
}

// Gradient returns the gradient of parameter n from the last Run. The plan
// must have been compiled with RetainGradients.
func (prog *Program) Gradient(n *gorgonia.Node) ([]float32, error) {
	if !prog.plan.spec.RetainGradients {
		return nil, errors.New("engine: gradients are kept only with RetainGradients")
	}
	for i, pv := range prog.plan.params {
		if prog.plan.values[pv].node == n {
			return prog.download(prog.plan.grads[i])
		}
	}
	return nil, fmt.Errorf("engine: %s is not a parameter", n.Name())
}

func (prog *Program) download(i int) ([]float32, error) {
	out := make([]float32, prog.plan.values[i].elems)
	if err := prog.dev.Download(out, prog.buffers[i]); err != nil {
		return nil, fmt.Errorf("engine: reading %s: %w", prog.plan.values[i].node.Name(), err)
	}
	return out, nil
}

// Run executes one step on the inputs set last: the forward pass and, when
// training, the backward pass with each block's update as soon as its
// gradients are final. It returns the output scalar.
func (prog *Program) Run() (float32, error) {
	p := prog.plan
	next := 0 // next update to run
	for si, s := range prog.steps {
		if err := prog.execute(s); err != nil {
			return 0, err
		}
		for ; next < len(p.updates) && p.updates[next].after == si; next++ {
			prog.update(p.updates[next].block)
		}
	}
	if prog.scratch == nil {
		prog.scratch = make([]float32, 1)
	}
	if err := prog.dev.Download(prog.scratch, prog.buffers[p.output]); err != nil {
		return 0, fmt.Errorf("engine: reading the output: %w", err)
	}
	return prog.scratch[0], nil
}

// execute runs one step on the device: a project op through its Launch
// method, gorgonia's gradient sum as an element-wise addition.
func (prog *Program) execute(s boundStep) error {
	out := prog.buffers[s.out]
	args := s.argBuffers
	if isGradientSum(s.op) {
		prog.k.Add(out, args[0], args[1])
		return nil
	}
	if err := s.op.(ops.Launcher).Launch(prog.k, out, args, s.shapes); err != nil {
		return fmt.Errorf("engine: %v: %w", s.op, err)
	}
	return nil
}

// update clips block b's gradient norm and applies Adam to its parameters.
func (prog *Program) update(b int) {
	p := prog.plan
	var sumSquares float64
	var members []int // indices into p.params
	for i, pv := range p.params {
		if p.values[pv].block == b {
			members = append(members, i)
			sumSquares += prog.k.SumSquares(prog.buffers[p.grads[i]])
		}
	}
	scale := kernels.ClipScale(sumSquares, p.spec.ClipNorm)
	prog.adamSteps[b]++
	for _, i := range members {
		prog.k.AdamStep(p.spec.Optimizer, prog.buffers[p.params[i]], prog.buffers[p.grads[i]], prog.moments[i][0], prog.moments[i][1], scale, prog.adamSteps[b])
	}
}
