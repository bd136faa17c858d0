package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/units"
)

// TestModeReservesFootprintAhead runs the cuda mode on simulated devices of
// one ledger whose capacity fits one mode's footprint but not two. While
// the first mode runs (it holds its reservation), a second mode fails at
// once as oom quoting the free memory and naming the holder (this
// process, through the first mode's device), having allocated nothing;
// after the first closes, the same second mode runs.
func TestModeReservesFootprintAhead(t *testing.T) {
	opts := smallLinearRun(t, TaskEval, ModeCUDA)
	opts.Epochs, opts.Warmup = 1, 0
	model, sched, err := opts.compile()
	if err != nil {
		t.Fatal(err)
	}
	shared := runModel{model: model, sched: sched} // the modes' one model, as Run shares it
	fp := sched.Footprint(engine.Resident{}, 1<<40).Device
	capacity := fp + fp/2
	path := filepath.Join(t.TempDir(), "ledger")
	var opened []*device.Sim
	opts.NewGPU = func() (device.Device, error) {
		d := device.NewSim(capacity, device.OpenLedger(path))
		opened = append(opened, d)
		return d, nil
	}
	data := opts.Workload.Data(opts.Seed)

	// The first mode runs the second from its first batch; the second,
	// on opts without the hook, does not recurse.
	var second ModeResult
	withHook := opts
	withHook.batchHook = func(mode Mode, epoch, batch int, v float32) float32 {
		if batch == 0 {
			second = runMode(context.Background(), opts, ModeCUDA, shared, data, &Header{})
		}
		return v
	}
	first := runMode(context.Background(), withHook, ModeCUDA, shared, data, &Header{})
	if first.Status.Kind != StatusOK {
		t.Fatalf("first mode: %s %s", first.Status.Kind, first.Status.Reason)
	}
	want := "needs " + units.Bytes(fp) + ", " + units.Bytes(capacity-fp) + " of"
	heldBy := fmt.Sprintf("; held by this process (pid %d)", os.Getpid())
	if second.Status.Kind != StatusOOM || !strings.HasPrefix(second.Status.Reason, want) || !strings.Contains(second.Status.Reason, heldBy) {
		t.Errorf("second mode while the first runs: %s %q, want oom %q… %q…", second.Status.Kind, second.Status.Reason, want, heldBy)
	}
	if len(opened) != 2 || opened[1].Stats().PeakBytes != 0 {
		t.Errorf("the second mode allocated before failing (%d devices opened)", len(opened))
	}

	again := runMode(context.Background(), opts, ModeCUDA, shared, data, &Header{})
	if again.Status.Kind != StatusOK {
		t.Errorf("second mode after the first closed: %s %s", again.Status.Kind, again.Status.Reason)
	}
}
