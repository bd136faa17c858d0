package gpu

import (
	"fmt"
	"unsafe"

	"gpuz/internal/device"
	"gpuz/internal/quant"
)

// The Dispatcher methods of the products by a quantized weight (quant.cu).

// quantRows is the most rows of x (or g) that the one-row kernels take
// (quant.cu's QUANT_ROWS): decode's products, a token or a few at a time.
const quantRows = 4

// quantTile and quantDepth are the tiled kernels' tile (QUANT_TILE rows by
// QUANT_TILE columns of the output) and step along the summed dimension
// (QUANT_DEPTH).
const (
	quantTile  = 64
	quantDepth = 32
)

// The shared memory of the kernels that use it: quant_xwt_tiled's pieces
// of x and W, quant_gw_tiled's of g and W, each row padded by one float,
// and quant_gw_row's per-warp sums.
const (
	sharedXWtTiled = 4 * 2 * quantTile * (quantDepth + 1)
	sharedGWTiled  = 4 * (quantTile*(quantDepth+1) + quantDepth*(quantTile+1))
	sharedGWRow    = 4 * (BlockSize / 32) * quantRows * quantGWColumns
)

// quantGWColumns is how many columns of dx a block of quant_gw_row
// computes (QUANT_GW_COLUMNS): a run of 8 weights for each of a warp's 32
// lanes.
const quantGWColumns = 32 * 8

// nf4Tables are the tables the kernels decode NF4 with (quant.cu's
// quant_matrix): its 16 levels, then the 256 values of the dynamic code
// that its absmaxes are quantized with.
var nf4Tables = func() []float32 {
	code := quant.DynamicCode()
	return append(quant.NF4Levels[:], code[:]...)
}()

// quantTables returns the device address of the tables a kind's kernels
// read: for NF4, nf4Tables written to the workspace (which waits for the
// launches before it), else 0. It records an error and returns false for a
// kind the kernels do not decode, a k that is not whole blocks of it, or
// tables that do not fit the workspace.
func (k Dispatcher) quantTables(op string, kind quant.Kind, kk int) (uintptr, bool) {
	if int(kind) >= len(quant.Kinds) {
		k.L.Fail(fmt.Errorf("gpu: %s: no kernel reads a %v weight", op, kind))
		return 0, false
	}
	if b := kind.BlockWeights(); kk%b != 0 {
		k.L.Fail(fmt.Errorf("gpu: %s: a %v weight's rows must be a multiple of %d weights; these have %d", op, kind, b, kk))
		return 0, false
	}
	if kind != quant.NF4 {
		return 0, true
	}
	tables := k.take(k.workspace(), 4*len(nf4Tables), "the NF4 tables")
	if tables == 0 {
		return 0, false
	}
	if err := k.L.Write(tables, unsafe.Pointer(&nf4Tables[0]), 4*len(nf4Tables)); err != nil {
		k.L.Fail(fmt.Errorf("gpu: %s: %w", op, err))
		return 0, false
	}
	return tables, true
}

// QuantXWt computes y = x·Wᵀ from the quantized W in w: for up to
// quantRows rows of x one warp per row of W (quant_xwt_row), else tiles of
// 64×64 outputs (quant_xwt_tiled). Every quant.cu kernel takes the output,
// the float operand, W's bytes, the NF4 tables (quantTables), W's kind
// (quant.Kind's number), the shape and W's row stride in bytes.
func (k Dispatcher) QuantXWt(kind quant.Kind, m, n, kk int, x, w, y device.Buffer) {
	if m == 0 || n == 0 {
		return
	}
	tables, ok := k.quantTables("quantized product", kind, kk)
	if !ok {
		return
	}
	rb := int(kind.RowBytes(kk))
	if m <= quantRows {
		warps := BlockSize / 32
		k.L.Launch("quant_xwt_row", (n+warps-1)/warps, BlockSize, 0, []Arg{Pointer(ptr(y)), Pointer(ptr(x)), Pointer(ptr(w)),
			Pointer(tables), Int(int(kind)), Int(m), Int(n), Int(kk), Long(rb)})
		return
	}
	k.L.Launch("quant_xwt_tiled", tiles(m)*tiles(n), BlockSize, sharedXWtTiled, []Arg{Pointer(ptr(y)), Pointer(ptr(x)), Pointer(ptr(w)),
		Pointer(tables), Int(int(kind)), Int(m), Int(n), Int(kk), Long(rb)})
}

// QuantGW computes dx = g·W from the quantized W in w: for up to quantRows
// rows of g one block per 256 columns of dx (quant_gw_row), else tiles of
// 64×64 outputs (quant_gw_tiled).
func (k Dispatcher) QuantGW(kind quant.Kind, m, n, kk int, g, w, dx device.Buffer) {
	if m == 0 || kk == 0 {
		return
	}
	tables, ok := k.quantTables("quantized product's gradient", kind, kk)
	if !ok {
		return
	}
	rb := int(kind.RowBytes(kk))
	if m <= quantRows {
		k.L.Launch("quant_gw_row", (kk+quantGWColumns-1)/quantGWColumns, BlockSize, sharedGWRow, []Arg{Pointer(ptr(dx)), Pointer(ptr(g)), Pointer(ptr(w)),
			Pointer(tables), Int(int(kind)), Int(m), Int(n), Int(kk), Long(rb)})
		return
	}
	k.L.Launch("quant_gw_tiled", tiles(m)*tiles(kk), BlockSize, sharedGWTiled, []Arg{Pointer(ptr(dx)), Pointer(ptr(g)), Pointer(ptr(w)),
		Pointer(tables), Int(int(kind)), Int(m), Int(n), Int(kk), Long(rb)})
}

// tiles is the number of quantTile-wide tiles that cover n.
func tiles(n int) int { return (n + quantTile - 1) / quantTile }

// QuantEmbedding sets dst to the rows of the quantized table [vocab, d] in
// w that ids select, decoded (quant_embedding). It reads the ids back to
// check them, as TokenEmbedding does, which waits for the device.
func (k Dispatcher) QuantEmbedding(kind quant.Kind, dst, ids, w device.Buffer, vocab int) error {
	n := dst.Len()
	d, err := lookupRow(n, ids.Len())
	if err != nil {
		return err
	}
	if kind == quant.NF4 || int(kind) >= len(quant.Kinds) {
		return fmt.Errorf("token embedding: no kernel reads a %v table", kind)
	}
	if err := kind.CheckShape(vocab, d); err != nil {
		return fmt.Errorf("token embedding: %w", err)
	}
	if _, err := k.readIDs(ids, vocab, "token embedding ids"); err != nil {
		return err
	}
	k.each("quant_embedding", n, Pointer(ptr(dst)), Pointer(ptr(ids)), Pointer(ptr(w)), Int(int(kind)), Long(n), Int(d), Int(vocab), Long(int(kind.RowBytes(d))))
	return nil
}
