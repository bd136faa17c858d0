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

// runResult is what managedRun saw: each batch's output, the parameters
// after the last, the program and its schedule (the caller closes the
// program), the fed inputs, and the device's stats before and after the
// second epoch.
type runResult struct {
	outputs []float32
	params  [][]float32
	prog    *engine.Program
	s       *engine.Schedule
	fed     []*gorgonia.Node
	second  [2]device.Stats
}

// managedRun runs two epochs of c under pl on dev.
func managedRun(t *testing.T, c models.Config, train bool, dev device.Device, pl engine.Placement) runResult {
	t.Helper()
	feed := models.FeedOf(c)
	m, s, prog := loadModel(t, c, train, dev, pl)
	r := runResult{prog: prog, s: s, fed: []*gorgonia.Node{m.Input, m.Target}}
	data := c.Data(1)
	for epoch := range 2 {
		r.second[0] = dev.Stats()
		for i := range feed.Samples / feed.Batch {
			batch := data.Batch(i, feed.Batch)
			for _, n := range r.fed {
				if err := prog.SetInput(n, batch); err != nil {
					t.Fatal(err)
				}
			}
			v, err := prog.Run()
			if err != nil {
				t.Fatalf("epoch %d batch %d: %v", epoch, i, err)
			}
			r.outputs = append(r.outputs, v)
		}
	}
	r.second[1] = dev.Stats()
	for _, b := range m.Blocks {
		for _, n := range b.Params {
			w, err := prog.Read(n)
			if err != nil {
				t.Fatal(err)
			}
			r.params = append(r.params, w)
		}
	}
	return r
}

// TestManagedMatchesResident runs every workload, training and evaluating,
// in managed memory of 64 KiB pages on a simulated device that holds a
// third of them (so that pages migrate out and back within each Run) and
// resident on a device that holds everything: the outputs and weights
// must be bit-identical, the device's peak within its capacity, pages must
// migrate, and the dry run (Schedule.Copies) must count exactly the bytes
// the device counted over the second epoch.
func TestManagedMatchesResident(t *testing.T) {
	const page = 64 << 10
	for _, c := range smallConfigs(t) {
		for _, train := range []bool{true, false} {
			t.Run(fmt.Sprintf("%T/train=%v", c, train), func(t *testing.T) {
				pl := engine.Placement{Managed: true, PageSize: page}
				resident := device.NewSim(1<<40, nil)
				defer resident.Close()
				want := managedRun(t, c, train, resident, engine.Placement{})
				want.prog.Close()

				capacity := int64(want.s.Pages(pl)) / 3 * page
				dev := device.NewSim(capacity, nil)
				defer dev.Close()
				got := managedRun(t, c, train, dev, pl)
				defer got.prog.Close()
				fp := got.s.Footprint(pl, capacity)
				if !slices.Equal(got.outputs, want.outputs) {
					t.Errorf("outputs %v, resident %v", got.outputs, want.outputs)
				}
				for i := range want.params {
					if !slices.Equal(got.params[i], want.params[i]) {
						t.Errorf("parameter %d differs from the resident run's", i)
						break
					}
				}
				if st := dev.Stats(); st.PeakBytes > capacity || st.PeakBytes > fp.Device {
					t.Errorf("peak %d bytes: capacity %d, footprint %d", st.PeakBytes, capacity, fp.Device)
				}
				if pages := got.s.Pages(pl); got.prog.Window() != fp.Window || fp.Window != pages/3 {
					t.Errorf("%d pages resident at most, footprint %d, want a third of %d", got.prog.Window(), fp.Window, pages)
				}
				feed := models.FeedOf(c)
				dry, err := got.s.Copies(pl, got.prog.Window(), feed.Samples/feed.Batch, got.fed)
				if err != nil {
					t.Fatal(err)
				}
				up, down := got.second[1].UploadBytes-got.second[0].UploadBytes, got.second[1].DownloadBytes-got.second[0].DownloadBytes
				if dry.UploadBytes != up || dry.DownloadBytes != down {
					t.Errorf("dry run %d bytes up, %d down; the run migrated and copied %d up, %d down", dry.UploadBytes, dry.DownloadBytes, up, down)
				}
				if down < int64(page) {
					t.Errorf("%d bytes migrated out in an epoch on a device a third of the region's size", down)
				}
			})
		}
	}
}

// TestManagedFitsMigratesNothing: with the device holding every page,
// the second epoch copies only the inputs and outputs, as the cuda mode.
func TestManagedFitsMigratesNothing(t *testing.T) {
	for _, c := range smallConfigs(t) {
		pl := engine.Placement{Managed: true, PageSize: 2 << 20}
		dev := device.NewSim(1<<30, nil)
		got := managedRun(t, c, true, dev, pl)
		resident := device.NewSim(1<<30, nil)
		want := managedRun(t, c, true, resident, engine.Placement{})
		if up, rup := got.second[1].UploadBytes-got.second[0].UploadBytes, want.second[1].UploadBytes-want.second[0].UploadBytes; up != rup {
			t.Errorf("%T: %d bytes up in the second epoch, the cuda mode's %d", c, up, rup)
		}
		if fp := got.s.Footprint(pl, 1<<30); fp.Window != got.s.Pages(pl) {
			t.Errorf("%T: %d of %d pages resident", c, fp.Window, got.s.Pages(pl))
		}
		got.prog.Close()
		want.prog.Close()
		dev.Close()
		resident.Close()
	}
}
