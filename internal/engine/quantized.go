package engine

import (
	"fmt"
	"unsafe"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/quant"
)

// QuantLauncher is an op that can read one argument, a weight, stored in a
// quantized kind (Spec.Weights) as it is: QuantOperand is that argument's
// index (-1 when the op has none), LaunchQuant runs the op with it stored
// in kind and every other argument and the output float32. The products
// by a frozen weight (ops.Projection, and its input gradient for LoRA's
// frozen base) are; a step of any other op cannot read a quantized value.
type QuantLauncher interface {
	QuantOperand() int
	LaunchQuant(k device.Kernels, kind quant.Kind, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error
}

// assignQuantized stores Spec.Weights's parameters in their kinds and marks
// each step that reads one (step.quantArg), after checking that the value
// may be stored so: a parameter, never trained, a matrix of whole blocks,
// read only by the quantized operand of a QuantLauncher. It runs before
// the 16-bit values are chosen, which skip the quantized ones.
func (sc *Schedule) assignQuantized() error {
	for si := range sc.steps {
		sc.steps[si].quantArg = -1
	}
	if len(sc.spec.Weights) == 0 {
		return nil
	}
	// Deterministic order for the errors: the parameters' own.
	for _, pv := range sc.params {
		v := &sc.values[pv]
		kind, ok := sc.spec.Weights[v.node]
		if !ok {
			continue
		}
		if err := sc.checkQuantizable(pv, kind); err != nil {
			return fmt.Errorf("engine: storing %s in %v: %w", v.node.Name(), kind, err)
		}
		rows, cols := v.shape[0], v.shape[1]
		v.store, v.qkind = quantized, kind
		v.elems = int((kind.Bytes(rows, cols) + 3) / 4)
	}
	for n := range sc.spec.Weights {
		if i, ok := sc.index[n]; !ok || sc.values[i].kind != kindParam {
			return fmt.Errorf("engine: %s is stored quantized but is not a parameter of the program", n.Name())
		}
	}
	for si := range sc.steps {
		s := &sc.steps[si]
		for j, a := range s.args {
			if sc.values[a].store != quantized {
				continue
			}
			q, ok := s.op.(QuantLauncher)
			if !ok || q.QuantOperand() != j || s.quantArg >= 0 {
				return fmt.Errorf("engine: %v cannot read the %v weight %s as stored", s.op, sc.values[a].qkind, sc.values[a].node.Name())
			}
			s.quantArg = j
		}
	}
	return nil
}

// checkQuantizable returns an error unless parameter value pv can be
// stored in kind: a quantized kind, a frozen (or untrained) non-state
// parameter whose shape is a matrix of whole blocks.
func (sc *Schedule) checkQuantizable(pv int, kind quant.Kind) error {
	v := sc.values[pv]
	switch {
	case !kind.Quantized():
		return fmt.Errorf("%v is not a quantized kind", kind)
	case v.state:
		return fmt.Errorf("it is a block's state")
	case sc.spec.Train && !v.frozen:
		return fmt.Errorf("it is trained, and a quantized weight can only be frozen")
	case len(v.shape) != 2:
		return fmt.Errorf("it has shape %v, not a matrix", v.shape)
	}
	return kind.CheckShape(v.shape[0], v.shape[1])
}

// quantizedWords returns data, a quantized parameter v's float32 values,
// quantized into its kind and packed into its words.
func (sc *Schedule) quantizedWords(v int, data []float32) ([]float32, error) {
	val := sc.values[v]
	words := make([]float32, val.elems)
	b := wordBytes(words)
	if err := quant.Quantize(val.qkind, b[:val.qkind.Bytes(val.shape[0], val.shape[1])], data, val.shape[0], val.shape[1]); err != nil {
		return nil, err
	}
	return words, nil
}

// dequantizedWords returns quantized parameter v's values from its words.
func (sc *Schedule) dequantizedWords(v int, words []float32) ([]float32, error) {
	val := sc.values[v]
	out := make([]float32, sc.count(v))
	b := wordBytes(words)
	if err := quant.Dequantize(val.qkind, out, b[:val.qkind.Bytes(val.shape[0], val.shape[1])], val.shape[0], val.shape[1]); err != nil {
		return nil, err
	}
	return out, nil
}

// wordBytes returns the bytes of words.
func wordBytes(words []float32) []byte {
	if len(words) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 4*len(words))
}

// quantReadSaving returns the bytes step s's cost counts for reading its
// quantized weight as float32 beyond what the weight's stored words are:
// the cost of a quantized product is its float32 twin's less this. A
// lookup (not a product) reads only the rows it names, counted as their
// float32 output: left as it is.
func (sc *Schedule) quantReadSaving(s step) int64 {
	if s.quantArg < 0 || !roundsInputs(castOf(s.op)) {
		return 0
	}
	a := s.args[s.quantArg]
	return 4 * int64(sc.count(a)-sc.values[a].elems)
}
