package engine

import (
	"gpuz/internal/cache"
	"gpuz/internal/device"
)

// Resident keeps every block resident on the device a program is loaded
// on, computed with its kernels: the cuda mode on a GPU, the cpu mode on
// the host.
type Resident struct{}

// Validate reports nothing: a resident placement has no options.
func (Resident) Validate() error { return nil }

// Usable reports nothing: every device holds a resident placement (or
// runs out of memory trying).
func (Resident) Usable(device.Device) error { return nil }

// Describe is "all blocks resident" (Short: "resident"); a run records
// nothing for it.
func (Resident) Describe(_ Footprint, _ int, form Form) string {
	switch form {
	case Long:
		return "all blocks resident"
	case Short:
		return "resident"
	}
	return ""
}

// Flags is none: a resident placement has no options.
func (Resident) Flags() []string { return nil }

// Settings is the zero value: a resident placement has no options.
func (Resident) Settings() Settings { return Settings{} }

// Keys is none: a resident placement records nothing.
func (Resident) Keys(Footprint) [][2]string { return nil }

// Paging reports false: no block is paged.
func (Resident) Paging() (cache.Config, bool) { return cache.Config{}, false }

// PageBytes is 0: nothing migrates.
func (Resident) PageBytes() int64 { return 0 }

func (Resident) bind(sc *Schedule) (bound, error) { return sc.placeBlocks(nil, cache.Config{}) }
