package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gpuz/internal/device"
	"gpuz/internal/memhog"
	"gpuz/internal/units"
)

// Setting is one swept parameter's value in a configuration of a sweep,
// as the user wrote it: {"take", "8"}, {"win_size", "3"}.
type Setting struct {
	Name, Value string
}

// SweepConfig is one configuration of a sweep: the run's options, the
// values of the swept parameters that made them, and the device memory to
// hold while it runs.
type SweepConfig struct {
	// Settings are the swept parameters' values, in the sweep's order.
	Settings []Setting
	// TakeBytes is the memory held on a device of Options.NewGPU for the
	// duration of the run, as gpuz take-mem holds it in a second shell;
	// 0 holds nothing.
	TakeBytes int64
	// Options are the run's; their Progress is replaced by the sweep's.
	Options Options
}

// SweepOptions configures a sweep: its configurations, in the order they
// run, and the names of the swept parameters.
type SweepOptions struct {
	Parameters []string
	Configs    []SweepConfig
	// Progress, when set, is called as the sweep advances: a configuration
	// starting (Sweep set), then its run's events; every event carries the
	// configuration's index in Config.
	Progress func(Event)
}

// SweepStep says which configuration of a sweep starts: its index, counted
// from 0, of Total, and its settings.
type SweepStep struct {
	Index, Total int
	Settings     []Setting
}

// SweepRow is what one configuration of a sweep measured.
type SweepRow struct {
	Settings  []Setting
	TakeBytes int64
	// DeviceFreeBytes is the free memory of the cuda and cache modes'
	// device once the take was held, before the run; -1 when the run has
	// no such device or its free memory could not be read.
	DeviceFreeBytes int64
	Result          Result
}

// SweepResult is a whole sweep: one row per configuration run, in order.
type SweepResult struct {
	Parameters []string
	Rows       []SweepRow
}

// Header is the header of the sweep's first configuration (zero when none
// ran): the workload, the machine and the environment, which every
// configuration shares. Its TakeBytes is the memory every configuration
// held, and 0 where they held different amounts (a sweep over --take):
// each row's TakeBytes then says its own, and the first's is no figure
// of the whole sweep.
func (s SweepResult) Header() Header {
	if len(s.Rows) == 0 {
		return Header{}
	}
	h := s.Rows[0].Result.Header
	for _, r := range s.Rows[1:] {
		if r.Result.Header.TakeBytes != h.TakeBytes {
			h.TakeBytes = 0
		}
	}
	return h
}

// Sweep runs every configuration in turn with Run, each with its take held
// around it, and returns a row per configuration. A mode that cannot run,
// runs out of memory or diverges is a status in its row, and the sweep goes
// on; a take that does not fit the device leaves the row's cuda and cache
// modes unavailable, saying why. When ctx is cancelled the configuration
// running stops as Run stops, its take is released, and the configurations
// not started are left out. The memory taken is released before Sweep
// returns, whatever happened.
func Sweep(ctx context.Context, so SweepOptions) (SweepResult, error) {
	res := SweepResult{Parameters: so.Parameters}
	for i, c := range so.Configs {
		if ctx.Err() != nil {
			break
		}
		if so.Progress != nil {
			so.Progress(Event{Config: i, Sweep: &SweepStep{Index: i, Total: len(so.Configs), Settings: c.Settings}})
		}
		row, err := sweepOne(ctx, i, c, so.Progress)
		if err != nil {
			return res, fmt.Errorf("configuration %d of %d (%s): %w", i+1, len(so.Configs), SettingsString(c.Settings), err)
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// sweepOne runs configuration i with its take held.
func sweepOne(ctx context.Context, i int, c SweepConfig, progress func(Event)) (SweepRow, error) {
	row := SweepRow{Settings: c.Settings, TakeBytes: c.TakeBytes, DeviceFreeBytes: -1}
	opts := c.Options
	opts.Progress = nil
	if i > 0 {
		// The time from the process's start to a first epoch is the first
		// configuration's; a later one's would count the earlier runs.
		opts.ProcessStart = time.Time{}
	}
	if progress != nil {
		opts.Progress = func(e Event) {
			e.Config = i
			progress(e)
		}
	}
	if opts.NewGPU != nil {
		free, release, err := take(ctx, opts.NewGPU, c.TakeBytes)
		if err != nil {
			// The cuda and cache modes get no device, and say why; cpu
			// still runs.
			reason := err
			opts.NewGPU = func() (device.Device, error) { return nil, reason }
		} else {
			defer release()
			row.DeviceFreeBytes = free
			opts.TakeBytes = c.TakeBytes
		}
	}
	r, err := Run(ctx, opts)
	if err != nil {
		return row, err
	}
	row.Result = r
	return row, nil
}

// take opens a device of newGPU and holds bytes of its memory with
// memhog.Hold until release is called (or ctx is done); it returns the
// device's free memory while held. With bytes 0 it only reads the free
// memory. release waits until the memory is released and the device
// closed.
func take(ctx context.Context, newGPU func() (device.Device, error), bytes int64) (free int64, release func(), err error) {
	dev, err := newGPU()
	if err != nil {
		return 0, nil, fmt.Errorf("opening the device to take memory on: %w", err)
	}
	if bytes == 0 {
		free, _, err := dev.MemInfo()
		dev.Close()
		if err != nil {
			return 0, nil, fmt.Errorf("reading the free memory of %s: %w", dev.Name(), err)
		}
		return free, func() {}, nil
	}
	holdCtx, cancel := context.WithCancel(ctx)
	holding, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- memhog.Hold(holdCtx, dev, bytes, false, func(e memhog.Event) {
			if e.Kind == memhog.Holding {
				close(holding)
			}
		})
	}()
	release = func() {
		cancel()
		<-done
		dev.Close()
	}
	select {
	case <-holding:
	case err := <-done:
		// Hold returned before holding: the memory was not free, or ctx
		// was done at once (Hold then held and released).
		done <- err
		release()
		if err == nil {
			err = ctx.Err()
		}
		var oom *device.OutOfMemoryError
		if errors.As(err, &oom) {
			// The whole request against what was free, as a mode's OOM
			// says it.
			heldBy := ""
			if h := oom.HeldBy(); h != "" {
				heldBy = "; " + h
			}
			return 0, nil, fmt.Errorf("--take %s: needs %s, %s of %s free%s",
				units.Bytes(bytes), units.Bytes(bytes), units.Bytes(oom.Free), units.Bytes(oom.Total), heldBy)
		}
		return 0, nil, fmt.Errorf("taking %s: %w", units.Bytes(bytes), err)
	}
	free, _, err = dev.MemInfo()
	if err != nil {
		release()
		return 0, nil, fmt.Errorf("reading the free memory of %s: %w", dev.Name(), err)
	}
	return free, release, nil
}

// SettingsString renders settings as "take=8 win_size=3".
func SettingsString(ss []Setting) string {
	s := ""
	for i, st := range ss {
		if i > 0 {
			s += " "
		}
		s += st.Name + "=" + st.Value
	}
	return s
}
