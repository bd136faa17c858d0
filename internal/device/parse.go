package device

import (
	"fmt"
	"strconv"
	"strings"

	"gpuz/internal/perfmodel"
	"gpuz/internal/units"
)

// AutoWarning is the warning Parse returns when "auto" finds no CUDA GPU
// and falls back to the simulated device.
const AutoWarning = "no CUDA GPU: cuda and cache run on a simulated 8GiB device (sim); their times are not GPU times"

// Parse returns the device a --device flag names:
//
//	auto        a CUDA GPU when this build has CUDA support and finds one,
//	            else sim:8GiB with a warning
//	cpu         the host
//	sim         a simulated GPU of DefaultSimCapacity (8 GiB)
//	sim:SIZE    a simulated GPU of SIZE bytes: 512MiB, 4GiB, 4GB, 1000000
//	sim:PROFILE a simulated GPU of a GPU profile's memory size, standing for
//	            that GPU (perfmodel.Lookup): sim:rtx4060-laptop, sim:h100-sxm
//	sim:FILE    the same for the profile in a JSON file (perfmodel.LoadProfile,
//	            as gpuz calibrate writes it): a name ending in .json or with a
//	            slash, sim:./l4.json
//	cuda[:N]    CUDA GPU N (default 0)
//
// A simulated device records its memory in ledger (nil: a device no other
// process sees). The warning, when not empty, is one line for the user. The
// error names the spec.
func Parse(spec string, ledger *Ledger) (dev Device, warning string, err error) {
	kind, arg, hasArg := strings.Cut(spec, ":")
	switch {
	case kind == "auto" && !hasArg:
		if d, err := openCUDA(0); err == nil {
			return d, "", nil
		}
		return NewSim(DefaultSimCapacity, ledger), AutoWarning, nil
	case kind == "cpu" && !hasArg:
		return NewHost(), "", nil
	case kind == "sim" && !hasArg:
		return NewSim(DefaultSimCapacity, ledger), "", nil
	case kind == "sim" && (startsWithLetter(arg) || perfmodel.IsFile(arg)):
		p, err := perfmodel.Open(arg)
		if err != nil {
			return nil, "", fmt.Errorf("device %q: %w", spec, err)
		}
		return NewSimProfile(p, ledger), "", nil
	case kind == "sim":
		size, err := units.ParseBytes(arg)
		if err != nil {
			return nil, "", fmt.Errorf("device %q: %w", spec, err)
		}
		if size < 4 {
			return nil, "", fmt.Errorf("device %q: a simulated device needs at least 4 bytes (one float32)", spec)
		}
		return NewSim(size, ledger), "", nil
	case kind == "cuda":
		index := 0
		if hasArg {
			n, err := strconv.Atoi(arg)
			if err != nil || n < 0 || arg != strconv.Itoa(n) {
				return nil, "", fmt.Errorf("device %q: the GPU index must be a whole number from 0", spec)
			}
			index = n
		}
		d, err := openCUDA(index)
		if err != nil {
			return nil, "", err
		}
		return d, "", nil
	}
	return nil, "", fmt.Errorf("unknown device %q (want auto, cpu, sim, sim:SIZE, sim:PROFILE, sim:FILE, cuda or cuda:N)", spec)
}

// startsWithLetter says s starts with an ASCII letter: a profile's name
// rather than a size.
func startsWithLetter(s string) bool {
	return s != "" && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}
