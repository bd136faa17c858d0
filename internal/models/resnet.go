package models

import (
	"errors"
	"fmt"

	"gorgonia.org/gorgonia"

	"gpuz/internal/engine"
	"gpuz/internal/ops"
)

// ResnetConfig sizes the resnet workload: Levels nested residual levels of
// two ConvModel blocks each, on Channels × ImageSize × ImageSize images,
// trained with MSE to reproduce its input. A ConvModel is
// 2 × [Conv2d(Channels→MidChannels), Conv2d(MidChannels→Channels),
// LeakyReLU(0.01)] with Kernel × Kernel kernels padded by Kernel/2; level 1
// is x + b₁(a₁(x)) and level i is x + bᵢ(level i−1(aᵢ(x))).
type ResnetConfig struct {
	Levels, Channels, MidChannels, ImageSize, Kernel int
	// Feed sizes the data set and the run, as in every workload.
	Feed
}

// DataLen is the number of values Data makes, computed without making
// them.
func (c ResnetConfig) DataLen() int { return c.Samples * c.Channels * c.ImageSize * c.ImageSize }

// Data returns the workload's data: Samples images of Channels ×
// ImageSize × ImageSize values from U(0, 1); the target is the input
// itself.
func (c ResnetConfig) Data(seed uint64) Data {
	return uniformData(seed, c.Samples, c.Channels*c.ImageSize*c.ImageSize)
}

// Validate reports the first size that cannot make a model.
func (c ResnetConfig) Validate() error { return validate(&c, c.check) }

// check is Validate's checks particular to the workload.
func (c ResnetConfig) check() error {
	if c.Kernel%2 == 0 {
		return fmt.Errorf("--kernel must be odd, got %d: padding kernel/2 keeps the image size only for odd kernels", c.Kernel)
	}
	if c.Kernel > 2*c.ImageSize-1 {
		// Past this every output reads the whole image and the rest of
		// the kernel only padding: no different model, only more work.
		return fmt.Errorf("--kernel (%d) must be at most 2 × --image-size − 1 (%d): a larger kernel sees only padding beyond the image", c.Kernel, 2*c.ImageSize-1)
	}
	if err := divides(c.Samples, c.Batch); err != nil {
		return err
	}
	// Every tensor's elements, and the data set's, must stay far below what
	// int and the host can hold.
	// The products are checked, never wrapped (product).
	if err := tooLong("levels", c.Levels, maxResnetLevels); err != nil {
		return err
	}
	image, ok := product(1<<32, c.ImageSize, c.ImageSize)
	if !ok {
		return errors.New("the images are too large: over 2³⁴ values in a tensor")
	}
	if _, ok := product(1<<34, max(c.Samples, c.Batch), max(c.Channels, c.MidChannels), int(image)); !ok {
		return errors.New("the images are too large: over 2³⁴ values in a tensor")
	}
	if _, ok := product(1<<36, c.Levels, c.Channels, c.MidChannels, c.Kernel, c.Kernel); !ok {
		return errors.New("the model is too large: over 2³⁶ weights")
	}
	// A level's two blocks save six activations each in training.
	return tooLarge(extent{"the saved activations, levels × 12 × batch × channels × image-size²",
		[]int{c.Levels, 12, c.Batch, max(c.Channels, c.MidChannels), c.ImageSize, c.ImageSize}})
}

// convModel is one ConvModel block: its parameters and how to apply it.
type convModel struct {
	block engine.Block
	// layers holds, per half, the weights and biases of its two
	// convolutions.
	layers [2][2]struct{ w, b *gorgonia.Node }
}

// Build returns the workload's graph for one batch. The blocks are listed
// as the PyTorch peer lists them: a₁, b₁, a₂, b₂, …, aₗ, bₗ.
func (c ResnetConfig) Build() (*Model, error) {
	m, err := newModel(c, "input", c.Batch, c.Channels, c.ImageSize, c.ImageSize)
	if err != nil {
		return nil, err
	}

	models := make([][2]*convModel, c.Levels) // per level: a, b
	for l := range c.Levels {
		for i, side := range []string{"a", "b"} {
			cm := c.newConvModel(m, fmt.Sprintf("level%d.%s", l+1, side))
			models[l][i] = cm
			m.Blocks = append(m.Blocks, cm.block)
		}
	}

	// level(l, x) is x + b_l(level(l−1, a_l(x))), level 1 having no inner
	// level.
	var level func(l int, x *gorgonia.Node) (*gorgonia.Node, error)
	level = func(l int, x *gorgonia.Node) (*gorgonia.Node, error) {
		h, err := c.apply(models[l][0], x)
		if err != nil {
			return nil, err
		}
		if l > 0 {
			if h, err = level(l-1, h); err != nil {
				return nil, err
			}
		}
		if h, err = c.apply(models[l][1], h); err != nil {
			return nil, err
		}
		if h, err = ops.Apply(ops.Add{}, x, h); err != nil {
			return nil, fmt.Errorf("level %d residual: %w", l+1, err)
		}
		return h, nil
	}
	out, err := level(c.Levels-1, m.Input)
	if err != nil {
		return nil, err
	}
	return m.withOutput(out, ops.MSE{Dims: 4})
}

// newConvModel makes one block's parameters with PyTorch's default Conv2d
// initialisation: weights and biases from U(±1/√fan_in), fan_in being
// in_channels · Kernel².
func (c ResnetConfig) newConvModel(m *Model, name string) *convModel {
	cm := &convModel{block: engine.Block{Name: name}}
	k := c.Kernel
	for half := range 2 {
		for j, io := range [2][2]int{{c.Channels, c.MidChannels}, {c.MidChannels, c.Channels}} {
			in, out := io[0], io[1]
			layer := fmt.Sprintf("%s.conv%d", name, 2*half+j)
			bound := fanInBound(in * k * k)
			w := m.param(&cm.block, layer+".weight", uniform(bound), out, in, k, k)
			b := m.param(&cm.block, layer+".bias", uniform(bound), out)
			cm.layers[half][j].w, cm.layers[half][j].b = w, b
		}
	}
	return cm
}

// apply adds one ConvModel applied to x to the graph.
func (c ResnetConfig) apply(cm *convModel, x *gorgonia.Node) (*gorgonia.Node, error) {
	conv := ops.Conv2d{Pad: c.Kernel / 2}
	h := x
	for half := range 2 {
		for _, layer := range cm.layers[half] {
			var err error
			if h, err = ops.Apply(conv, h, layer.w, layer.b); err != nil {
				return nil, fmt.Errorf("%s: %w", layer.w.Name(), err)
			}
		}
		var err error
		if h, err = ops.Apply(ops.LeakyReLU{Slope: ops.DefaultLeakySlope}, h); err != nil {
			return nil, fmt.Errorf("%s activation %d: %w", cm.block.Name, half, err)
		}
	}
	return h, nil
}
