package engine_test

import (
	"fmt"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/models"
)

// TestManagedMatchesResident runs every workload, training and evaluating,
// in managed memory of 64 KiB pages on a simulated device that holds a
// third of them (so that pages migrate out and back within each Run) and
// resident on a device that holds everything: the outputs and weights
// must be bit-identical, the device's peak within its capacity, pages must
// migrate, and the dry run (Schedule.Copies) must count exactly the bytes
// the device counted over the second epoch. With the host advised for the
// pages that do not fit, nothing migrates after the warm-up epoch and the
// kernels' accesses in place are counted, the dry run's equal to the
// device's.
func TestManagedMatchesResident(t *testing.T) {
	const page = 64 << 10
	for _, c := range smallConfigs(t) {
		for _, train := range []bool{true, false} {
			for _, advise := range []bool{false, true} {
				t.Run(fmt.Sprintf("%T/train=%v/advise-host=%v", c, train, advise), func(t *testing.T) {
					checkManaged(t, c, train, engine.Managed{PageSize: page, AdviseHost: advise})
				})
			}
		}
	}
}

// checkManaged runs two epochs of c under the managed placement pl on a
// device that holds a third of its pages, and resident, and compares them
// (see TestManagedMatchesResident).
func checkManaged(t *testing.T, c models.Config, train bool, pl engine.Managed) {
	feed := models.FeedOf(c)
	perEpoch := feed.Samples / feed.Batch
	resident := device.NewSim(1<<40, nil)
	defer resident.Close()
	want, s, m := runPlaced(t, c, train, resident, engine.Resident{}, 2*perEpoch)
	capacity := int64(s.Footprint(pl, 0).Pages) / 3 * pl.PageSize
	dev := device.NewSim(capacity, nil)
	defer dev.Close()
	got, _, _ := runPlaced(t, c, train, dev, pl, 2*perEpoch)
	if !slices.Equal(got.values, want.values) {
		t.Errorf("outputs %v, resident %v", got.values, want.values)
	}
	for name, w := range want.params {
		if !slices.Equal(got.params[name], w) {
			t.Errorf("parameter %s differs from the resident run's", name)
			break
		}
	}
	fp := s.Footprint(pl, capacity)
	if got.peak > capacity || got.peak > fp.Device {
		t.Errorf("peak %d bytes: capacity %d, footprint %d", got.peak, capacity, fp.Device)
	}
	if got.window != fp.Window || fp.Window != fp.Pages/3 {
		t.Errorf("%d pages resident at most, footprint %d, want a third of %d", got.window, fp.Window, fp.Pages)
	}
	dry, err := s.Copies(pl, got.window, perEpoch, []*gorgonia.Node{m.Input, m.Target})
	if err != nil {
		t.Fatal(err)
	}
	// The second epoch, in the run and as the resident run copied it.
	from, to := got.stats[perEpoch], got.stats[2*perEpoch]
	up, down, remote := to.UploadBytes-from.UploadBytes, to.DownloadBytes-from.DownloadBytes, to.RemoteBytes-from.RemoteBytes
	residentDown := want.stats[2*perEpoch].DownloadBytes - want.stats[perEpoch].DownloadBytes
	if dry.UploadBytes != up || dry.DownloadBytes != down {
		t.Errorf("dry run %d bytes up, %d down; the run migrated and copied %d up, %d down", dry.UploadBytes, dry.DownloadBytes, up, down)
	}
	if dry.RemoteBytes != remote {
		t.Errorf("dry run %d bytes read in place, the run %d", dry.RemoteBytes, remote)
	}
	switch {
	case !pl.AdviseHost && down < pl.PageSize:
		t.Errorf("%d bytes migrated out in an epoch on a device a third of the region's size", down)
	case pl.AdviseHost && (down != residentDown || remote == 0):
		t.Errorf("host preferred: %d bytes down, %d read in place; want the outputs' alone (%d) and some in place", down, remote, residentDown)
	}
}

// TestManagedFitsMigratesNothing: with the device holding every page,
// the second epoch copies only the inputs and outputs, as the cuda mode.
func TestManagedFitsMigratesNothing(t *testing.T) {
	for _, c := range smallConfigs(t) {
		feed := models.FeedOf(c)
		perEpoch := feed.Samples / feed.Batch
		pl := engine.Managed{PageSize: 2 << 20}
		dev, resident := device.NewSim(1<<30, nil), device.NewSim(1<<30, nil)
		got, s, _ := runPlaced(t, c, true, dev, pl, 2*perEpoch)
		want, _, _ := runPlaced(t, c, true, resident, engine.Resident{}, 2*perEpoch)
		second := func(r hybridRun) int64 { return r.stats[2*perEpoch].UploadBytes - r.stats[perEpoch].UploadBytes }
		if second(got) != second(want) {
			t.Errorf("%T: %d bytes up in the second epoch, the cuda mode's %d", c, second(got), second(want))
		}
		if fp := s.Footprint(pl, 1<<30); fp.Window != fp.Pages {
			t.Errorf("%T: %d of %d pages resident", c, fp.Window, fp.Pages)
		}
		dev.Close()
		resident.Close()
	}
}

// advisedSim is a simulated device that records the ranges the engine
// advises to the host (the simulated device itself ignores the advice:
// the engine's page residency keeps those pages on the host).
type advisedSim struct {
	*device.Sim
	advised [][2]int64 // offset and length of each call
}

func (a *advisedSim) Caps() device.Caps {
	c := a.Sim.Caps()
	c.Managed = a
	return c
}

func (a *advisedSim) AdviseHost(b device.Buffer, off, n int64) error {
	a.advised = append(a.advised, [2]int64{off, n})
	return a.Sim.AdviseHost(b, off, n)
}

// TestManagedAdvisesThePagesBeyond: with the host advised, the engine
// advises the device (CUDA's cuMemAdvise, which the simulated device does
// not act on) of exactly the pages its free memory does not hold, from the
// first page past the resident ones to the region's end: the page
// residency's rule (TestManagedFootprintSplitsTheRegion) and the advice
// given to a GPU must agree (issue 44 item 26: advice starting a page
// early passed every test).
func TestManagedAdvisesThePagesBeyond(t *testing.T) {
	const page = 64 << 10
	c := smallConfigs(t)[0]
	pl := engine.Managed{PageSize: page, AdviseHost: true}
	resident := device.NewSim(1<<40, nil)
	_, s, _ := runPlaced(t, c, true, resident, engine.Resident{}, 1)
	resident.Close()
	for _, third := range []int{1, 2} {
		capacity := int64(s.Footprint(pl, 0).Pages) * int64(third) / 3 * page
		fp := s.Footprint(pl, capacity)
		dev := &advisedSim{Sim: device.NewSim(capacity, nil)}
		runPlaced(t, c, true, dev, pl, 1)
		dev.Close()
		from := int64(fp.Window) * page
		want := [][2]int64{{from, fp.Device + fp.Host - from}}
		if fp.Window == 0 || fp.Window == fp.Pages {
			t.Fatalf("%d of %d pages fit: nothing tested", fp.Window, fp.Pages)
		}
		if !slices.Equal(dev.advised, want) {
			t.Errorf("%d of %d pages fit: advised %v (offset, length), want %v", fp.Window, fp.Pages, dev.advised, want)
		}
	}
}
