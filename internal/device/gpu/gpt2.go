package gpu

import (
	"fmt"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// GELUTanh sets dst to the tanh form of GELU of src.
func (k Dispatcher) GELUTanh(dst, src device.Buffer) {
	k.each("gelu_tanh", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(src)), Long(dst.Len()))
}

// GELUTanhGrad sets dst to GELUTanh's gradient at x given g.
func (k Dispatcher) GELUTanhGrad(dst, x, g device.Buffer) {
	k.each("gelu_tanh_grad", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(x)), Pointer(ptr(g)), Long(dst.Len()))
}

// TokenEmbedding sets dst to the rows of weight that ids select. It reads
// the ids back to check them, which waits for the device.
func (k Dispatcher) TokenEmbedding(dst, ids, weight device.Buffer) error {
	n := dst.Len()
	d, err := lookupRow(n, ids.Len())
	if err != nil {
		return err
	}
	if weight.Len()%d != 0 {
		return fmt.Errorf("token embedding: %d weights are not rows of %d", weight.Len(), d)
	}
	if _, err := k.readIDs(ids, weight.Len()/d, "token embedding ids"); err != nil {
		return err
	}
	k.each("token_embedding", n, Pointer(ptr(dst)), Pointer(ptr(ids)), Pointer(ptr(weight)), Long(n), Int(d))
	return nil
}

// lookupRow returns the row length of a lookup's n outputs, one row per
// of its ids; an error when they do not split so.
func lookupRow(n, ids int) (int, error) {
	d, err := rowLength("token embedding", "outputs", n, ids)
	if err == nil && d == 0 {
		err = fmt.Errorf("token embedding: %d outputs do not split into %d rows", n, ids)
	}
	return d, err
}

// AddPositions sets dst to x plus the positions, row r taking row r mod
// p.SeqLen of pos.
func (k Dispatcher) AddPositions(dst, x, pos device.Buffer, p hostmath.Positions) {
	if p.Dim <= 0 || p.SeqLen <= 0 {
		return
	}
	k.each("add_positions", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(x)), Pointer(ptr(pos)), Long(dst.Len()), Int(p.Dim), Int(p.SeqLen))
}

// PositionsGrad sets dst to AddPositions' gradient with respect to pos:
// one thread per element of dst, adding its rows of g in the host's order.
func (k Dispatcher) PositionsGrad(dst, g device.Buffer, p hostmath.Positions) {
	if p.Dim <= 0 || p.SeqLen <= 0 {
		return
	}
	k.each("positions_grad", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(g)), Long(dst.Len()), Long(g.Len()/p.Dim), Int(p.Dim), Int(p.SeqLen))
}
