package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"gpuz/internal/device"
	"gpuz/internal/report"
)

// devicesGemmSize is the n of the n×n×n SGEMM that gpuz devices times.
const devicesGemmSize = 2000

func newDevicesCmd(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "devices",
		Short: "List the devices with their memory, copy rates and SGEMM speed",
		Long: `devices lists every device gpuz can run on: the host (cpu), the simulated
GPU (sim) and, in the GPU build (make cuda), each CUDA GPU. For each it prints
the compute capability, free and total memory, and measured figures: copy
rates between host and device memory (from pinned and from pageable host
memory, each way) and the speed of a 2000×2000×2000 SGEMM. The host and the
simulated device copy within host memory (memcpy rates) and run the host's
BLAS; a few seconds in all.`,
		Example: "  gpuz devices",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			specs := []string{"cpu", "sim"}
			n, err := device.CUDACount()
			if err != nil {
				fmt.Fprintf(stderr, "gpuz: no CUDA GPUs listed: %v\n", err)
			}
			for i := range n {
				specs = append(specs, fmt.Sprintf("cuda:%d", i))
			}
			var infos []device.Info
			for _, spec := range specs {
				dev, _, err := device.Parse(spec, device.OpenLedger(""))
				if err != nil {
					return &runFailure{fmt.Errorf("opening %s: %w", spec, err)}
				}
				info, err := device.Measure(dev, devicesGemmSize)
				if err != nil {
					return &runFailure{fmt.Errorf("measuring %s: %w", dev.Name(), err)}
				}
				infos = append(infos, info)
			}
			return report.WriteDevices(stdout, infos)
		},
	}
}
