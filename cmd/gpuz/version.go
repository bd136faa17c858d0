package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"gpuz/internal/bench"
	"gpuz/internal/device"
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

func newVersionCmd(ios *IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version and how this binary was built",
		Example: "  gpuz version",
		Args:    noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(ios.Out, "gpuz %s (%s, %s/%s)\nBLAS: %s\nCUDA support: %s\n",
				version, runtime.Version(), runtime.GOOS, runtime.GOARCH, bench.BLASName(), yesNo(device.CUDASupport))
			return err
		},
	}
}
