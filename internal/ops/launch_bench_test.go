package ops

import (
	"fmt"
	"testing"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
)

// BenchmarkSmallHostLaunch is what one small kernel call costs on the
// host: each dense-workload op launched through Launch on the host device
// as the engine launches it, on one row of 16 (rows1: the fixed cost per
// kernel, the work a few hundred FLOPs at most) and on the tiny linear
// workload's batch of 150 rows of 16 (rows150: issue 22's iris-sized case,
// the fixed cost plus up to 77 kFLOP). perfmodel.HostKernelOverhead cites
// it.
func BenchmarkSmallHostLaunch(b *testing.B) {
	for _, rows := range []int{1, 150} {
		b.Run(fmt.Sprintf("rows%d", rows), func(b *testing.B) { benchmarkLaunches(b, rows) })
	}
}

// benchmarkLaunches times each dense-workload op on rows rows of 16.
func benchmarkLaunches(b *testing.B, rows int) {
	const dims = 16
	for _, tc := range []launchCase{
		{name: "Linear", op: Linear{}, shapes: []tensor.Shape{{rows, dims}, {dims, dims}, {dims}}},
		{name: "LinearInputGrad", op: LinearInputGrad{}, shapes: []tensor.Shape{{rows, dims}, {dims, dims}}},
		{name: "LinearWeightGrad", op: LinearWeightGrad{}, shapes: []tensor.Shape{{rows, dims}, {rows, dims}}},
		{name: "LinearBiasGrad", op: LinearBiasGrad{}, shapes: []tensor.Shape{{rows, dims}}},
		{name: "LeakyReLU", op: LeakyReLU{Slope: 0.01}, shapes: []tensor.Shape{{rows, dims}}},
		{name: "LeakyReLUGrad", op: LeakyReLUGrad{Slope: 0.01}, shapes: []tensor.Shape{{rows, dims}, {rows, dims}}},
		{name: "Add", op: Add{}, shapes: []tensor.Shape{{rows, dims}, {rows, dims}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			launcher := New(tc.op).(deviceOp)
			host := device.NewHost()
			args := make([]device.Buffer, len(tc.shapes))
			for i, s := range tc.shapes {
				args[i], _ = host.Alloc(s.TotalSize())
			}
			shape, err := op{tc.op}.shape(tc.shapes)
			if err != nil {
				b.Fatal(err)
			}
			out, _ := host.Alloc(shape.TotalSize())
			for b.Loop() {
				if err := launcher.Launch(host.Kernels(), out, args, tc.shapes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
