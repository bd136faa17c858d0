package report

import (
	"errors"
	"fmt"

	"gpuz/internal/bench"
	"gpuz/internal/engine"
	"gpuz/internal/units"
)

// MemoryPicture is a plan's device memory over the points of one batch
// (each compute step and each block's update, in order), as package plot
// draws it: a panel per mode, placement and recompute setting.
type MemoryPicture struct {
	// Title names the plan: workload, task, scale, blocks and batch.
	Title string
	// Categories name the bands, bottom to top (engine.Categories); the
	// last is the memory held but idle.
	Categories []string
	// SlotBand is the index in Categories of the paging slots' band,
	// which a panel's Slots part.
	SlotBand int
	Panels   []MemoryPanel
}

// MemoryPanel is one row of the plan drawn over the batch's points.
type MemoryPanel struct {
	// Title names the mode, its placement and recompute setting, the
	// device and the device need.
	Title string
	// Bands holds, per category of MemoryPicture.Categories, its bytes at
	// each point: every point's bands sum to Need.
	Bands [][]int64
	// Capacity is the device's memory, Free what is free of it for the
	// plan (less --take's bytes, Take), Need the placement's device need.
	Capacity, Free, Take, Need int64
	// Peak is the most bytes live values occupy (every band but the idle
	// one), first reached at point PeakAt.
	Peak   int64
	PeakAt int
	// Ticks mark where the forward pass, the backward pass (with its
	// updates) and the batch's end fall.
	Ticks []PictureTick
	// Slots are the paging slots' bytes, one per slot of the window, then
	// the staging buffer's (engine.StepMemory.Slots): the parts of the
	// paging slots' band. Nil without paged blocks.
	Slots []int64
}

// PictureTick is a labelled point of a panel's x axis.
type PictureTick struct {
	At    int
	Label string
}

// PlanPicture returns the memory picture of p: a panel per row of the
// plan that has a timeline (a mode with a device, in a placement other
// than managed), in the plan's order. A plan with none is an error that
// says why.
func PlanPicture(p bench.MemoryPlan) (MemoryPicture, error) {
	pic := MemoryPicture{Title: planTitle(p)}
	cats := engine.Categories()
	for i, c := range cats {
		pic.Categories = append(pic.Categories, c.String())
		if c == engine.PagingSlots {
			pic.SlotBand = i
		}
	}
	for _, m := range p.Modes {
		if len(m.Timeline) == 0 {
			continue
		}
		panel := MemoryPanel{
			Title: fmt.Sprintf("%s, %s, recompute %s on %s: needs %s", m.Mode, m.Placement.Describe(m.Footprint, p.Blocks, engine.Short),
				m.Recompute, m.Device, units.Bytes(m.Footprint.Device)),
			Bands:    make([][]int64, len(cats)),
			Capacity: m.DeviceTotal, Free: m.DeviceFree, Take: p.Header.TakeBytes, Need: m.Footprint.Device,
		}
		backward := -1
		panel.Slots = m.Timeline[0].Slots
		for i, pt := range m.Timeline {
			for c := range cats {
				panel.Bands[c] = append(panel.Bands[c], pt.Bytes[cats[c]])
			}
			if in := pt.InUse(); in > panel.Peak {
				panel.Peak, panel.PeakAt = in, i
			}
			if pt.Phase != engine.Forward && backward < 0 {
				backward = i
			}
		}
		panel.Ticks = []PictureTick{{0, "forward"}}
		if backward > 0 {
			panel.Ticks = append(panel.Ticks, PictureTick{backward, "backward and updates"})
		}
		panel.Ticks = append(panel.Ticks, PictureTick{len(m.Timeline), "end of the batch"})
		pic.Panels = append(pic.Panels, panel)
	}
	if len(pic.Panels) == 0 {
		return MemoryPicture{}, errors.New("no mode of the plan has a device timeline (the cuda, cache, cpu and hybrid modes have one, managed does not)")
	}
	return pic, nil
}
