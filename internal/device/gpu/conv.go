package gpu

import (
	"fmt"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// conv computes out = x ⊛ w (+ bias when bias is not 0) for shape s, image
// by image, as im2col into the workspace and one GEMM per tile of output
// rows: as many rows as the workspace left in w holds.
func (k Dispatcher) conv(ws *workspace, out, x, w, bias uintptr, s hostmath.ConvShape) {
	plane, patch := s.OutH*s.OutW, s.InC*s.Kernel*s.Kernel
	if s.Batch == 0 || plane == 0 {
		return
	}
	free := ws.size - ((ws.used + 255) &^ 255)
	rows := min(s.OutH, free/(4*patch*max(s.OutW, 1)))
	if rows < 1 {
		k.L.Fail(fmt.Errorf("gpu: convolution %+v: one output row's column matrix (%d bytes) exceeds the workspace", s, 4*patch*s.OutW))
		return
	}
	cols := k.take(ws, 4*patch*rows*s.OutW, "the column matrix")
	inImage, outImage := 4*s.InC*s.InH*s.InW, 4*s.OutC*plane
	for img := range s.Batch {
		xi, oi := x+uintptr(img*inImage), out+uintptr(img*outImage)
		for y0 := 0; y0 < s.OutH; y0 += rows {
			y1 := min(y0+rows, s.OutH)
			width := (y1 - y0) * s.OutW
			k.each("im2col", patch*width, Pointer(cols), Pointer(xi), Int(s.InC), Int(s.InH), Int(s.InW), Int(s.Kernel), Int(s.Pad), Int(s.OutW), Int(y0), Int(y1))
			// out[:, y0·OutW …] (OutC × width, row stride plane) = w (OutC × patch) · cols (patch × width)
			k.gemm(false, false, s.OutC, width, patch, 1, w, patch, cols, width, 0, oi+uintptr(4*y0*s.OutW), plane)
		}
	}
	if bias != 0 {
		n := s.Batch * s.OutC * plane
		k.each("add_channel_bias", n, Pointer(out), Pointer(bias), Long(n), Long(plane), Int(s.OutC))
	}
}

// Conv2d sets dst to the convolution of x with w plus bias.
func (k Dispatcher) Conv2d(dst, x, w, bias device.Buffer, s hostmath.ConvShape) {
	var b uintptr
	if bias != nil {
		b = ptr(bias)
	}
	k.conv(k.workspace(), ptr(dst), ptr(x), ptr(w), b, s)
}

// Conv2dInputGrad sets dst to Conv2d's gradient with respect to x: the
// correlation of g with the weights flipped and transposed, padded by
// Kernel−1−Pad, as the host computes it.
func (k Dispatcher) Conv2dInputGrad(dst, g, w device.Buffer, s hostmath.ConvShape) {
	ws := k.workspace()
	flipped := k.take(ws, 4*w.Len(), "the flipped weights")
	if flipped == 0 {
		return
	}
	k.each("flip_weights", w.Len(), Pointer(flipped), Pointer(ptr(w)), Int(s.OutC), Int(s.InC), Int(s.Kernel))
	back := hostmath.ConvShape{Batch: s.Batch, InC: s.OutC, InH: s.OutH, InW: s.OutW, OutC: s.InC, OutH: s.InH, OutW: s.InW, Kernel: s.Kernel, Pad: s.Kernel - 1 - s.Pad}
	k.conv(ws, ptr(dst), ptr(g), flipped, 0, back)
}

// Conv2dWeightGrad sets dst to Conv2d's gradient with respect to w:
// Σ over images and row tiles of g_tile · cols_tileᵀ, accumulated by the
// GEMMs in a fixed order.
func (k Dispatcher) Conv2dWeightGrad(dst, x, g device.Buffer, s hostmath.ConvShape) {
	plane, patch := s.OutH*s.OutW, s.InC*s.Kernel*s.Kernel
	if s.Batch == 0 || plane == 0 {
		k.each("fill_value", dst.Len(), Pointer(ptr(dst)), Long(dst.Len()), Float(0))
		return
	}
	ws := k.workspace()
	rows := min(s.OutH, ws.size/(4*patch*max(s.OutW, 1)))
	if rows < 1 {
		k.L.Fail(fmt.Errorf("gpu: convolution weight gradient %+v: one output row's column matrix (%d bytes) exceeds the workspace", s, 4*patch*s.OutW))
		return
	}
	cols := k.take(ws, 4*patch*rows*s.OutW, "the column matrix")
	inImage, outImage := 4*s.InC*s.InH*s.InW, 4*s.OutC*plane
	var beta float32
	for img := range s.Batch {
		xi, gi := ptr(x)+uintptr(img*inImage), ptr(g)+uintptr(img*outImage)
		for y0 := 0; y0 < s.OutH; y0 += rows {
			y1 := min(y0+rows, s.OutH)
			width := (y1 - y0) * s.OutW
			k.each("im2col", patch*width, Pointer(cols), Pointer(xi), Int(s.InC), Int(s.InH), Int(s.InW), Int(s.Kernel), Int(s.Pad), Int(s.OutW), Int(y0), Int(y1))
			// dw (OutC × patch) += g_tile (OutC × width, row stride plane) · colsᵀ (width × patch)
			k.gemm(false, true, s.OutC, patch, width, 1, gi+uintptr(4*y0*s.OutW), plane, cols, width, beta, ptr(dst), patch)
			beta = 1
		}
	}
}

// Conv2dBiasGrad sets dst to g summed over images and positions, one block
// per channel.
func (k Dispatcher) Conv2dBiasGrad(dst, g device.Buffer, s hostmath.ConvShape) {
	k.L.Launch("bias_grad", s.OutC, BlockSize, sharedReduce, []Arg{Pointer(ptr(dst)), Pointer(ptr(g)), Int(s.Batch), Int(s.OutC), Long(s.OutH * s.OutW)})
}
