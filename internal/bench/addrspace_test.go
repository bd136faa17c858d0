package bench

import (
	"errors"
	"runtime"
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/engine"
)

// TestRuntimeHeadroom checks the headroom's arithmetic: the base, a BLAS
// thread per CPU at least, and a GOMAXPROCS share; more threads add.
func TestRuntimeHeadroom(t *testing.T) {
	n := int64(runtime.NumCPU())
	procs := procsHeadroom(runtime.GOMAXPROCS(0), runtime.NumCPU())
	for _, tt := range []struct {
		threads int
		blas    int64
	}{
		{0, n},
		{1, n},
		{int(n) + 6, n + 6},
	} {
		want := int64(headroomBase) + tt.blas*headroomPerThread + procs
		if got := RuntimeHeadroom(tt.threads); got != want {
			t.Errorf("RuntimeHeadroom(%d) = %d, want %d", tt.threads, got, want)
		}
	}
}

// TestProcsHeadroom checks what GOMAXPROCS processors cost, by hand: 64
// MiB each up to glibc's cap of 8 malloc arenas per CPU, then 8 MiB for
// each quarter of the rest (the GC's dedicated mark workers' stacks).
// Issue 36 item 7: at 64 MiB a processor, GOMAXPROCS=1000 claimed 64.6
// GiB on 2 CPUs and refused under 8 GB a run that peaks at 4.6 GB.
func TestProcsHeadroom(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		procs, cpus int
		want        int64
	}{
		{1, 2, 64 * mib},
		{2, 2, 128 * mib},
		{16, 2, 1024 * mib},              // the arenas' cap on 2 CPUs
		{17, 2, 1024*mib + 8*mib},        // one past: a quarter rounds up
		{20, 2, 1024*mib + 8*mib},        // four past: one worker
		{21, 2, 1024*mib + 16*mib},       // five past: two
		{1000, 2, 1024*mib + 246*8*mib},  // 984 past: 246 workers, 2.92 GiB in all
		{1000, 16, 8192*mib + 218*8*mib}, // 128 arenas, 872 past
		{8, 1, 512 * mib},
	} {
		if got := procsHeadroom(tt.procs, tt.cpus); got != tt.want {
			t.Errorf("procsHeadroom(%d processors, %d CPUs) = %d MiB, want %d MiB", tt.procs, tt.cpus, got/mib, tt.want/mib)
		}
	}
}

// TestAddressSpaceNeed is the least host need of the plan's modes (the
// cache mode's placements included) plus the headroom (issue 44 item 8:
// it was the largest, so that a managed page beyond the limit refused the
// whole run, where without a limit that mode alone is skipped); the data
// set alone when no mode's plan is whole.
func TestAddressSpaceNeed(t *testing.T) {
	opts := smallLinearRun(t, TaskTrain, ModeCUDA, ModeCache, ModeCPU)
	p, err := PlanMemory(opts, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	least, largest := p.Modes[0].HostNeed, int64(0)
	for _, m := range p.Modes {
		least, largest = min(least, m.HostNeed), max(largest, m.HostNeed)
	}
	got, err := AddressSpaceNeed(opts)
	if want := least + RuntimeHeadroom(opts.Threads); err != nil || got != want || least == largest {
		t.Errorf("AddressSpaceNeed = %d, %v; want %d (least of %d modes, %d, plus headroom)", got, err, want, len(p.Modes), least)
	}
	opts.Modes = []Mode{ModeCUDA}
	opts.NewGPU = func() (device.Device, error) { return nil, errors.New("no device") }
	got, err = AddressSpaceNeed(opts)
	if want := p.Header.DataBytes + RuntimeHeadroom(opts.Threads); err != nil || got != want {
		t.Errorf("AddressSpaceNeed of a run of no whole plan = %d, %v; want %d (the data set plus headroom)", got, err, want)
	}
}

// TestManagedPageBeyondDevice plans a managed mode whose page is larger
// than the device's free memory (issue 36 item 6): it is a row that does
// not fit, needing the page, with no copies counted, not an error from
// the engine's page residency ("a device that holds 0 pages cannot run a
// kernel") that failed the address-space check of every run under
// `ulimit -v`, and `gpuz plan`. A page that fits is planned as before.
func TestManagedPageBeyondDevice(t *testing.T) {
	for _, tt := range []struct {
		name      string
		device    int64 // the simulated device's bytes
		page      int64
		fits      bool
		deviceFit int64 // the footprint's device bytes when it does not fit
	}{
		{"page twice the device", 64 << 20, 128 << 20, false, 128 << 20},
		{"the default 2 MiB page on 1 MiB", 1 << 20, 2 << 20, false, 2 << 20},
		{"page the whole device", 4 << 20, 4 << 20, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := smallLinearRun(t, TaskTrain, ModeManaged, ModeCPU)
			opts.NewGPU = func() (device.Device, error) { return device.NewSim(tt.device, nil), nil }
			opts.ManagedPage = tt.page
			if _, err := AddressSpaceNeed(opts); err != nil {
				t.Fatalf("AddressSpaceNeed: %v", err)
			}
			p, err := PlanMemory(opts, PlanOptions{})
			if err != nil {
				t.Fatalf("PlanMemory: %v", err)
			}
			mp := p.Modes[0]
			if mp.Mode != ModeManaged || mp.FitsDevice != tt.fits {
				t.Fatalf("%s row: fits the device %v, want %v", mp.Mode, mp.FitsDevice, tt.fits)
			}
			if !tt.fits && (mp.Footprint.Device != tt.deviceFit || mp.Copies != (engine.Copies{}) || mp.Footprint.Window != 0) {
				t.Errorf("a page that does not fit: device need %d, copies %+v, window %d; want %d, none, 0",
					mp.Footprint.Device, mp.Copies, mp.Footprint.Window, tt.deviceFit)
			}
			if tt.fits && mp.Copies.Count == 0 {
				t.Errorf("a page that fits: no copies counted")
			}
			planner, err := NewPlanner(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer planner.Close()
			_, free, _ := planner.GPU()
			fp, err := planner.Plan(ModeManaged, opts.Config, free, true)
			if err != nil || fp.FitsDevice != tt.fits {
				t.Errorf("Planner.Plan: fits the device %v, %v; want %v", fp.FitsDevice, err, tt.fits)
			}
		})
	}
}
