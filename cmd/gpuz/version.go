package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"gpuz/internal/bench"
	"gpuz/internal/device"
	"gpuz/internal/sysinfo"
)

// yesNo renders a build property.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// newVersionCmd builds "gpuz version": the release, Go and platform, the
// VCS revision, its commit time and whether the tree was modified
// ("unknown" for a binary built without VCS stamping, as by go run or with
// -buildvcs=false), the BLAS, what runs the float32 matrix products
// (gpuz's own AVX-512 SGEMM or the BLAS), the path of the host's 16-bit
// (bf16) matrix products and of the products by a quantized weight, whether large host buffers use transparent huge pages and
// CUDA support.
func newVersionCmd(ios *IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version and how this binary was built",
		Example: "  gpuz version",
		Args:    noArgs,
		RunE: func(*cobra.Command, []string) error {
			b := sysinfo.ReadBuild()
			_, err := fmt.Fprintf(ios.Out, "gpuz %s (%s, %s/%s)\nrevision: %s\ncommit time: %s\nmodified: %s\nBLAS: %s\nfloat32 products: %s\nCPU vectors: %s\n16-bit products: %s\nquantized products: %s\ntransparent huge pages: %s\nCUDA support: %s\n",
				b.Version, b.GoVersion, runtime.GOOS, runtime.GOARCH, b.Revision, b.Time, b.Modified, bench.BLASName(), bench.SGEMMPath(), bench.CPUVector(), bench.BF16Path(), bench.QuantPath(), bench.HugePages(), yesNo(device.CUDASupport))
			if w := bench.BLASWarning(); w != "" && err == nil {
				_, err = fmt.Fprintf(ios.Out, "warning: %s\n", w)
			}
			return err
		},
	}
}
