package bench

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/device"
)

// contextBytes is what a countingDevice holds from open to Close, as a CUDA
// context holds device memory whether or not a program runs on it.
const contextBytes = 1 << 20

// countingDevice is a simulated device that records the free memory it
// first reports and whether it was closed, and holds contextBytes until
// Close.
type countingDevice struct {
	*device.Sim
	release   func()
	firstFree int64
	seen      bool
	closes    int
}

func (d *countingDevice) MemInfo() (free, total int64, err error) {
	free, total, err = d.Sim.MemInfo()
	if !d.seen {
		d.firstFree, d.seen = free, true
	}
	return free, total, err
}

func (d *countingDevice) Close() error {
	d.closes++
	d.release()
	return d.Sim.Close()
}

// deviceCounter opens countingDevices on one ledger and remembers them.
type deviceCounter struct {
	mu     sync.Mutex
	ledger *device.Ledger
	opened []*countingDevice
}

func (c *deviceCounter) open(t *testing.T) func() (device.Device, error) {
	return func() (device.Device, error) {
		sim := device.NewSim(256<<20, c.ledger)
		release, err := sim.Reserve(contextBytes)
		if err != nil {
			t.Errorf("reserving the context: %v", err)
			return nil, err
		}
		d := &countingDevice{Sim: sim, release: release}
		c.mu.Lock()
		c.opened = append(c.opened, d)
		c.mu.Unlock()
		return d, nil
	}
}

func (c *deviceCounter) checkClosed(t *testing.T, what string, want int) {
	t.Helper()
	if len(c.opened) != want {
		t.Errorf("%s opened %d devices, want %d", what, len(c.opened), want)
	}
	for i, d := range c.opened {
		if d.closes != 1 {
			t.Errorf("%s: device %d closed %d times, want 1", what, i, d.closes)
		}
		// Every device saw the capacity less its own context: nothing
		// was left held by the devices before it.
		if want := 256<<20 - int64(contextBytes); d.firstFree != want {
			t.Errorf("%s: device %d saw %d bytes free, want %d (an earlier device still holds memory)", what, i, d.firstFree, want)
		}
	}
	entries, err := c.ledger.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("%s left ledger entries %+v", what, entries)
	}
}

// TestRunAndPlanCloseDevices runs every mode, and plans every mode, on
// counting devices sharing a ledger: each device opened is closed once, and
// each (the auto policy's included) sees all memory free but its own.
func TestRunAndPlanCloseDevices(t *testing.T) {
	opts := smallWorkloads(t)["linear"]
	opts.Samples, opts.Epochs = 2*opts.Batch, 1
	opts.Task, opts.Adam, opts.ClipNorm, opts.Seed = TaskTrain, DefaultAdam(), 1, 5
	opts.Modes = []Mode{ModeCPU, ModeCUDA, ModeCache}
	opts.Cache = cache.Config{Policy: cache.Auto}

	run := &deviceCounter{ledger: device.OpenLedger(filepath.Join(t.TempDir(), "ledger"))}
	opts.NewGPU = run.open(t)
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Modes {
		if m.Status.Kind != StatusOK {
			t.Errorf("%s: %s %s", m.Mode, m.Status.Kind, m.Status.Reason)
		}
	}
	run.checkClosed(t, "Run", 2)

	plan := &deviceCounter{ledger: device.OpenLedger(filepath.Join(t.TempDir(), "ledger"))}
	opts.NewGPU = plan.open(t)
	if _, err := PlanMemory(opts, PlanOptions{}); err != nil {
		t.Fatal(err)
	}
	plan.checkClosed(t, "PlanMemory", 2)
}

// thiefDevice is a simulated device whose memory another holder of its
// ledger takes right after the mode reads how much is free.
type thiefDevice struct {
	*device.Sim
	thief *device.Ledger
	take  int64
}

func (d *thiefDevice) MemInfo() (free, total int64, err error) {
	free, total, err = d.Sim.MemInfo()
	if d.take > 0 {
		if err := d.thief.Set(d.take, "thief"); err != nil {
			return 0, 0, err
		}
		d.take = 0
	}
	return free, total, err
}

// TestOOMQuotesFreeAtFailure has another holder take all but 1 KiB of the
// device between the mode's reading of free memory and its load: the oom
// status quotes the 1 KiB free when the load failed, not the capacity.
func TestOOMQuotesFreeAtFailure(t *testing.T) {
	opts := smallWorkloads(t)["linear"]
	opts.Samples, opts.Epochs = 2*opts.Batch, 1
	opts.Task, opts.Adam, opts.ClipNorm, opts.Seed = TaskTrain, DefaultAdam(), 1, 5
	opts.Modes = []Mode{ModeCUDA}
	path := filepath.Join(t.TempDir(), "ledger")
	const capacity = 256 << 20
	opts.NewGPU = func() (device.Device, error) {
		return &thiefDevice{Sim: device.NewSim(capacity, device.OpenLedger(path)), thief: device.OpenLedger(path), take: capacity - 1024}, nil
	}
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Modes[0].Status
	if st.Kind != StatusOOM || !strings.Contains(st.Reason, "1.00 KiB of") {
		t.Errorf("status %s %q, want oom quoting 1.00 KiB free", st.Kind, st.Reason)
	}
}
