package bench

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/device"
)

// sweepOnSim returns a sweep of the small linear model, train, cuda and
// cache with a window of one block, on a 2 MiB simulated device whose
// ledger is returned, under the takes given: 0 and 1 MiB leave cuda
// (1.29 MiB) room and then none, and cache (536 KiB) room under both, as
// scripts/two-shell.sh does with a second process.
func sweepOnSim(t *testing.T, takes ...int64) (SweepOptions, *device.Ledger) {
	t.Helper()
	ledger := device.OpenLedger(filepath.Join(t.TempDir(), "ledger"))
	so := SweepOptions{Parameters: []string{"take"}}
	for _, b := range takes {
		opts := smallLinearRun(t, TaskTrain, ModeCUDA, ModeCache)
		opts.Epochs, opts.Warmup = 2, 1
		opts.NewGPU = func() (device.Device, error) { return device.NewSim(2<<20, ledger), nil }
		// window-paged: DictCache's window keeps Adam's state resident and
		// does not fit under the take (TestWindowOOMWherePagedFits).
		opts.Cache = cache.Config{Policy: cache.WindowPaged, Window: 1}
		so.Configs = append(so.Configs, SweepConfig{
			Settings: []Setting{{"take", strconv.FormatInt(b, 10)}}, TakeBytes: b, Options: opts,
		})
	}
	return so, ledger
}

// TestSweepTakesMemory runs the sweep without and with 1 MiB taken: the
// first row is all ok, the second has cuda out of memory and cache ok,
// each row records the free memory under its take, every event carries
// its configuration's index, and the ledger is empty afterwards.
func TestSweepTakesMemory(t *testing.T) {
	so, ledger := sweepOnSim(t, 0, 1<<20)
	var starts []SweepStep
	configOf := map[int]bool{}
	so.Progress = func(e Event) {
		if e.Sweep != nil {
			starts = append(starts, *e.Sweep)
		}
		configOf[e.Config] = true
	}
	res, err := Sweep(context.Background(), so)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || len(starts) != 2 || starts[1].Index != 1 || starts[1].Total != 2 || !configOf[0] || !configOf[1] {
		t.Fatalf("%d rows, starts %+v, configurations seen %v", len(res.Rows), starts, configOf)
	}
	want := [][]StatusKind{{StatusOK, StatusOK}, {StatusOOM, StatusOK}}
	for i, row := range res.Rows {
		for j, m := range row.Result.Modes {
			if m.Status.Kind != want[i][j] {
				t.Errorf("row %d (%v) %s: %s, want %s", i, row.Settings, m.Mode, m.Status, want[i][j])
			}
		}
	}
	if f0, f1 := res.Rows[0].DeviceFreeBytes, res.Rows[1].DeviceFreeBytes; f0 != 2<<20 || f1 != 1<<20 {
		t.Errorf("free memory recorded %d and %d, want %d and %d", f0, f1, 2<<20, 1<<20)
	}
	if res.Rows[1].TakeBytes != 1<<20 {
		t.Errorf("take recorded %d", res.Rows[1].TakeBytes)
	}
	if entries, err := ledger.Entries(); err != nil || len(entries) != 0 {
		t.Errorf("after the sweep the ledger holds %+v, %v", entries, err)
	}
}

// TestSweepTakeTooLarge takes more than the device has: the row's cuda and
// cache modes are unavailable saying so, and the sweep goes on.
func TestSweepTakeTooLarge(t *testing.T) {
	so, ledger := sweepOnSim(t, 4<<20, 0)
	res, err := Sweep(context.Background(), so)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(res.Rows))
	}
	for _, m := range res.Rows[0].Result.Modes {
		if m.Status.Kind != StatusUnavailable || !strings.Contains(m.Status.Reason, "--take 4.00 MiB: needs 4.00 MiB, 2.00 MiB of 2.00 MiB free") {
			t.Errorf("%s under a take too large: %s", m.Mode, m.Status)
		}
	}
	if m := res.Rows[1].Result.Modes[0]; m.Status.Kind != StatusOK {
		t.Errorf("the next configuration's %s: %s", m.Mode, m.Status)
	}
	if entries, err := ledger.Entries(); err != nil || len(entries) != 0 {
		t.Errorf("after the sweep the ledger holds %+v, %v", entries, err)
	}
}

// TestSweepCancelReleases cancels the context during the first
// configuration's first epoch, while its take is held: the sweep stops
// there, and the ledger is empty when it returns.
func TestSweepCancelReleases(t *testing.T) {
	so, ledger := sweepOnSim(t, 1<<20, 1<<20, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var heldDuring []device.LedgerEntry
	so.Progress = func(e Event) {
		if e.Batch != nil && heldDuring == nil {
			heldDuring, _ = ledger.Entries()
			cancel()
		}
	}
	res, err := Sweep(ctx, so)
	if err != nil {
		t.Fatal(err)
	}
	if len(heldDuring) == 0 {
		t.Fatal("the ledger showed no take during the run")
	}
	if len(res.Rows) != 1 {
		t.Errorf("%d rows after a cancel in the first configuration, want 1", len(res.Rows))
	}
	if entries, err := ledger.Entries(); err != nil || len(entries) != 0 {
		t.Errorf("after the cancelled sweep the ledger holds %+v, %v", entries, err)
	}
}
