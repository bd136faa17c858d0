package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"gpuz/internal/device"
	"gpuz/internal/kernels"
)

// yesNo renders a build property.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// version is the release, set at link time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version and how this binary was built",
		Example: "  gpuz version",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(stdout, "gpuz %s (%s, %s/%s)\nBLAS: %s\nCUDA support: %s\n",
				version, runtime.Version(), runtime.GOOS, runtime.GOARCH, kernels.BLASName(), yesNo(device.CUDASupport))
			return err
		},
	}
}
