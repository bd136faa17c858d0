package models

import (
	"errors"
	"fmt"

	"gpuz/internal/engine"
	"gpuz/internal/levers"
	"gpuz/internal/ops"
)

// LinearConfig sizes the linear workload: Blocks blocks, each of
// LayersPerBlock × [Linear(Dims→Dims), LeakyReLU(0.01)], trained to
// reproduce its input under MSE.
type LinearConfig struct {
	Blocks, LayersPerBlock, Dims int
	// LoRA adapts the layers (levers.LoRA: their one kind is "layer");
	// the zero value is off.
	LoRA levers.LoRA
	// Feed sizes the data set and the run, as in every workload.
	Feed
}

// DataLen is the number of values Data makes, computed without making
// them.
func (c LinearConfig) DataLen() int { return c.Samples * c.Dims }

// Data returns the workload's data: Samples rows of Dims values from
// U(0, 1); the target is the input itself.
func (c LinearConfig) Data(seed uint64) Data { return uniformData(seed, c.Samples, c.Dims) }

// Validate reports the first size that cannot make a model.
func (c LinearConfig) Validate() error { return validate(&c, c.check) }

// check is Validate's checks particular to the workload.
func (c LinearConfig) check() error {
	if err := divides(c.Samples, c.Batch); err != nil {
		return err
	}
	if err := checkLoRA(c); err != nil {
		return err
	}
	layers, ok := product(maxLinearLayers, c.Blocks, c.LayersPerBlock)
	if !ok {
		return fmt.Errorf("the model is too large: %d blocks × %d layers per block, at most %d layers (a longer graph takes minutes to build)",
			c.Blocks, c.LayersPerBlock, maxLinearLayers)
	}
	if _, ok := product(maxElements, int(layers), c.Dims, c.Dims); !ok {
		return errors.New("the model is too large: over 2⁴⁰ parameters")
	}
	// Every tensor: a weight, a batch's activations, all the activations a
	// training step saves (two per layer) and the data set.
	return tooLarge(
		extent{"a weight, dims²", []int{c.Dims, c.Dims}},
		extent{"a batch's activations, batch × dims", []int{c.Batch, c.Dims}},
		extent{"the saved activations, layers × 2 × batch × dims", []int{int(layers), 2, c.Batch, c.Dims}},
		extent{"the data set, samples × dims", []int{c.Samples, c.Dims}},
	)
}

// Build returns the workload's graph for one batch.
func (c LinearConfig) Build() (*Model, error) {
	m, err := newModel(c, "input", c.Batch, c.Dims)
	if err != nil {
		return nil, err
	}
	ad, err := newAdapters(c, m)
	if err != nil {
		return nil, err
	}
	bound := fanInBound(c.Dims)
	h := m.Input
	for b := range c.Blocks {
		block := engine.Block{Name: fmt.Sprintf("block%d", b)}
		for l := range c.LayersPerBlock {
			name := fmt.Sprintf("block%d.layer%d", b, l)
			w := m.param(&block, name+".weight", uniform(bound), c.Dims, c.Dims)
			bias := m.param(&block, name+".bias", uniform(bound), c.Dims)
			x := h
			if h, err = ops.Apply(ops.Linear{}, x, w, bias); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if h, err = ad.adapt(&block, name, "layer", x, h, 0, c.Dims); err != nil {
				return nil, err
			}
			if h, err = ops.Apply(ops.LeakyReLU{Slope: ops.DefaultLeakySlope}, h); err != nil {
				return nil, fmt.Errorf("%s activation: %w", name, err)
			}
		}
		m.Blocks = append(m.Blocks, block)
	}
	return m.withOutput(h, ops.MSE{Dims: 2})
}
