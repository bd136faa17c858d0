package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"gpuz/internal/bench"
	"gpuz/internal/engine"
	"gpuz/internal/units"
)

// planKinds returns the kinds of bytes the program holds, with a note
// on each.
func planKinds(p bench.MemoryPlan) []struct {
	name  string
	bytes int64
	note  string
} {
	return []struct {
		name  string
		bytes int64
		note  string
	}{
		{"parameters", p.Bytes.Parameters, ""},
		{"gradients", p.Gradients, "in the arena, each until its block's update"},
		{"optimizer state", p.Bytes.Optimizer, "Adam's two moments"},
		{"saved activations", p.Bytes.Saved, "kept for the backward pass, with their blocks"},
		{"arena", p.Bytes.Arena, "activations, gradients and temporaries, reused by liveness"},
		{"inputs", p.Bytes.Inputs, "one batch and its target"},
	}
}

// planTitle is the plan's first line.
func planTitle(p bench.MemoryPlan) string {
	h := p.Header
	return fmt.Sprintf("Memory plan of gpuz %s %s (scale %s): %d blocks, batch %d", h.Model, h.Task, h.Scale, p.Blocks, h.Batch)
}

// WritePlan writes a memory plan as text: what the program holds by kind,
// then the default plan table (see planTable), every line within 100
// columns.
func WritePlan(w io.Writer, p bench.MemoryPlan) error {
	return WritePlanAs(w, p, Options{Format: FormatText})
}

// WritePlanAs writes a memory plan in o's format: as text or Markdown, what
// the program holds by kind and the plan table (every column with o.Wide);
// as CSV, one row per mode and cache policy (writePlanCSV); as JSON, the
// document of WritePlanJSON.
func WritePlanAs(w io.Writer, p bench.MemoryPlan, o Options) error {
	return writeAs(w, o.Format, formatWriters{
		text: func(b *strings.Builder) error {
			b.WriteString(planTitle(p) + "\n")
			for _, k := range planKinds(p) {
				line := fmt.Sprintf("  %-18s %10s", k.name, units.Bytes(k.bytes))
				if k.note != "" {
					line += "   " + k.note
				}
				b.WriteString(line + "\n")
			}
			fmt.Fprintf(b, "  a step needs at most %s resident\n", plural(int64(p.MinWindow), "block"))
			b.WriteString("  " + workText(p) + "\n\n")
			planTable(p, o.Wide).writeText(b)
			b.WriteString("\n")
			copiesTable(p, o.Wide).writeText(b)
			return nil
		},
		markdown: func(b *strings.Builder) error {
			b.WriteString(planTitle(p) + "\n\n")
			kinds := table{columns: []column{{"kind", true}, {"bytes", false}, {"note", true}}}
			for _, k := range planKinds(p) {
				kinds.rows = append(kinds.rows, []string{k.name, units.Bytes(k.bytes), k.note})
			}
			kinds.notes = []string{"a step needs at most " + plural(int64(p.MinWindow), "block") + " resident", workText(p)}
			kinds.writeMarkdown(b)
			b.WriteString("\n")
			planTable(p, o.Wide).writeMarkdown(b)
			b.WriteString("\n")
			copiesTable(p, o.Wide).writeMarkdown(b)
			return nil
		},
		csv:  func(b *strings.Builder) error { return writePlanCSV(b, p) },
		json: func(w io.Writer) error { return WritePlanJSON(w, p) },
	})
}

// placementText describes a placement in a few words: "all blocks
// resident", "window policy, 3/12 blocks", "auto policy, 12/12 blocks,
// optimizer on host"; short, it says "resident", "window 3/12", "auto
// 12/12, opt. on host". A hybrid placement is its blocks' places, with
// its cache blocks' policy and window: "host:0-1,cache:2-13, window
// policy, window 3". A managed one is its resident pages of the region's
// and their size: "managed, 40/76 pages of 2 MiB resident", short
// "40/76×2 MiB".
func placementText(pl engine.Placement, fp engine.Footprint, blocks int, short bool) string {
	window := fp.Window
	switch {
	case pl.Managed && short:
		return fmt.Sprintf("%d/%d×%s", window, fp.Pages, units.Bytes(pl.PageSize))
	case pl.Managed:
		return "managed, " + bench.ManagedText(window, fp.Pages, pl.PageSize) + " resident"
	case pl.Blocks != nil && !pl.Paged:
		return engine.PlaceText(pl.Blocks)
	case pl.Blocks != nil: // the cache blocks' policy and window
		s := fmt.Sprintf("%s, %s policy, window %d", engine.PlaceText(pl.Blocks), pl.Cache.Policy, window)
		if pl.Cache.OptimizerOnHost {
			s += ", opt. on host"
		}
		return s
	case !pl.Paged && short:
		return "resident"
	case !pl.Paged:
		return "all blocks resident"
	}
	s := fmt.Sprintf("%s policy, %d/%d blocks", pl.Cache.Policy, window, blocks)
	if short {
		s = fmt.Sprintf("%s %d/%d", pl.Cache.Policy, window, blocks)
	}
	if pl.Cache.OptimizerOnHost && short {
		s += ", opt. on host"
	} else if pl.Cache.OptimizerOnHost {
		s += ", optimizer on host"
	}
	return s
}

// planTable builds the plan's table: one row per mode and cache policy.
// By default, within 100 columns: the mode, its placement, the device, the
// bytes it needs there and the free memory, the bytes it needs on the host
// and the memory available, and whether it fits ("no: device", "no: host",
// "no: both"); a mode that was not planned shows its status there, the
// reason in a note. Where each mode has one device, as a plan's always
// has, the default table names the devices in a note instead of a column
// ("devices: sim:rtx4060-laptop (cuda, cache) and host (cpu)"), so that a
// long device name does not widen it. wide spells the placement and device
// out and shows whether each side fits in a column of its own, as the plan
// table always did.
func planTable(p bench.MemoryPlan, wide bool) table {
	var t table
	var ns notes
	yesNo := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	devices, modes := make([]string, len(p.Modes)), make([]string, len(p.Modes))
	deviceOf := map[bench.Mode]string{}
	deviceCol := wide
	for i, m := range p.Modes {
		devices[i], modes[i] = m.Device, string(m.Mode)
		if d, ok := deviceOf[m.Mode]; ok && d != m.Device && m.Device != "" && d != "" {
			deviceCol = true
		}
		if m.Device != "" {
			deviceOf[m.Mode] = m.Device
		}
	}
	if wide {
		for _, name := range []string{"mode", "placement", "device", "device need", "device free", "fits device", "host need", "host available", "fits host"} {
			t.columns = append(t.columns, column{name, name == "mode" || name == "placement" || name == "device"})
		}
	} else {
		for _, name := range []string{"mode", "placement", "device", "device need", "free", "host need", "available", "fits"} {
			if name != "device" || deviceCol {
				t.columns = append(t.columns, column{name, name == "mode" || name == "placement" || name == "device" || name == "fits"})
			}
		}
	}
	for _, m := range p.Modes {
		fp := m.Footprint
		if m.Device == "" {
			fp.Window = 0
		}
		row := []string{string(m.Mode), placementText(m.Placement, fp, p.Blocks, !wide)}
		switch {
		case m.Device == "" && wide:
			row = append(row, na, na, na, na, na, na, m.Status.String())
		case m.Device == "":
			row = append(row, na, na, na, na)
			if deviceCol {
				row = append(row, na)
			}
			row = append(row, ns.status(m.Mode, m.Status))
		case wide:
			row = append(row, m.Device,
				units.Bytes(m.Footprint.Device), units.Bytes(m.DeviceFree), yesNo(m.FitsDevice),
				units.Bytes(m.HostNeed), units.Bytes(m.HostAvailable), yesNo(m.FitsHost))
		default:
			fits := "yes"
			switch {
			case !m.FitsDevice && !m.FitsHost:
				fits = "no: both"
			case !m.FitsDevice:
				fits = "no: device"
			case !m.FitsHost:
				fits = "no: host"
			}
			if deviceCol {
				row = append(row, ns.shortDevice(m.Device))
			}
			row = append(row, units.Bytes(m.Footprint.Device), units.Bytes(m.DeviceFree),
				units.Bytes(m.HostNeed), units.Bytes(m.HostAvailable), fits)
		}
		t.rows = append(t.rows, row)
	}
	t.notes = []string{"sizes in binary units: 1 KiB = 1024 B, MiB, GiB"}
	if on := groupModes(devices, modes); !deviceCol && on != "" {
		t.notes = append(t.notes, "devices: "+on)
	}
	t.notes = append(t.notes, ns.lines...)
	return t
}

// workText says an epoch's device work, the same in every mode (Adam's
// updates counted on the device even where the optimizer runs on the
// host): "per epoch (2 batches): 188 GFLOP, 40.1 GiB of device traffic,
// 2.40k op launches".
func workText(p bench.MemoryPlan) string {
	n := int64(p.Batches)
	batches := fmt.Sprintf("%d batches", n)
	if n == 1 {
		batches = "1 batch"
	}
	return fmt.Sprintf("per epoch (%s): %s GFLOP, %s of device traffic, %s op launches",
		batches, units.Sig3(float64(n*p.Work.FLOPs)/1e9), units.Bytes(n*p.Work.Bytes), units.Count(n*p.Work.Launches))
}

// copiesTable builds the table of each mode's copies per epoch, counted
// without running: the bytes up and down and the number of copies; wide
// adds the bytes the steps wait for and those that may overlap compute.
// Where a mode has a prediction (a device with a profile, --host-profile
// for cpu), a "predicted" column gives the model time per epoch with its
// roofline bound, and wide adds what limits it.
func copiesTable(p bench.MemoryPlan, wide bool) table {
	t := table{columns: []column{{"mode", true}, {"placement", true}, {"up/epoch", false}, {"down/epoch", false}, {"copies/epoch", false}}}
	if wide {
		t.columns = append(t.columns, column{"waited for", false}, column{"may overlap", false})
	}
	var modes []string
	var preds []*bench.Prediction
	var models []float64
	for _, m := range p.Modes {
		if m.Device == "" {
			continue
		}
		modes, preds = append(modes, string(m.Mode)), append(preds, m.Prediction)
		if m.Prediction != nil {
			models = append(models, m.Prediction.Model.Seconds())
		}
	}
	u := timeUnitFor(models)
	if len(models) > 0 {
		t.columns = append(t.columns, column{"predicted (" + u.name + ")", false})
		if wide {
			t.columns = append(t.columns, column{"limiter", true})
		}
	}
	for _, m := range p.Modes {
		if m.Device == "" {
			continue
		}
		row := []string{string(m.Mode), placementText(m.Placement, m.Footprint, p.Blocks, !wide),
			units.Bytes(m.Copies.UploadBytes), units.Bytes(m.Copies.DownloadBytes), units.Count(m.Copies.Count)}
		if wide {
			row = append(row, units.Bytes(m.Copies.SyncBytes()), units.Bytes(m.Copies.OverlapBytes))
		}
		if len(models) > 0 {
			pred, limiter := na, na
			if m.Prediction != nil {
				pred, limiter = predictedCell(u, m.Prediction), cmp.Or(m.Prediction.Limiter, na)
			}
			row = append(row, pred)
			if wide {
				row = append(row, limiter)
			}
		}
		t.rows = append(t.rows, row)
	}
	t.notes = []string{"host↔device copies of an epoch after the first; the auto policy's prefetch uploads may overlap compute on a device with a copy stream"}
	if note := predictionNote(modes, preds); note != "" {
		t.notes = append(t.notes, note)
	}
	return t
}

// The plan's JSON document. Sizes are in bytes.
type (
	jsonPlan struct {
		Version   int            `json:"version"`
		Header    jsonHeader     `json:"header"`
		Bytes     jsonPlanBytes  `json:"bytes"`
		Blocks    int            `json:"blocks"`
		MinWindow int            `json:"min_window"`
		Batches   int            `json:"batches"`
		Work      jsonWork       `json:"work_per_batch"`
		Modes     []jsonModePlan `json:"modes"`
	}
	jsonWork struct {
		Launches int64            `json:"launches"`
		FLOPs    int64            `json:"flops"`
		Bytes    int64            `json:"bytes"`
		Kernels  []jsonKernelWork `json:"kernels"`
	}
	jsonKernelWork struct {
		Name     string `json:"name"`
		Launches int64  `json:"launches"`
		FLOPs    int64  `json:"flops"`
		Bytes    int64  `json:"bytes"`
	}
	jsonCopies struct {
		UploadBytes   int64 `json:"upload_bytes"`
		DownloadBytes int64 `json:"download_bytes"`
		SyncBytes     int64 `json:"sync_bytes"`
		OverlapBytes  int64 `json:"overlap_bytes"`
		Count         int64 `json:"count"`
	}
	jsonPlanBytes struct {
		Parameters int64 `json:"parameters"`
		Gradients  int64 `json:"gradients"`
		Optimizer  int64 `json:"optimizer"`
		Saved      int64 `json:"saved_activations"`
		Arena      int64 `json:"arena"`
		Inputs     int64 `json:"inputs"`
	}
	jsonModePlan struct {
		Mode            string `json:"mode"`
		Paged           bool   `json:"paged"`
		Policy          string `json:"policy"`
		OptimizerOnHost bool   `json:"optimizer_on_host"`
		Window          int    `json:"window"`
		// PageBytes and Pages are a managed placement's page and its
		// region's pages, of which Window are resident; absent otherwise.
		PageBytes     int64  `json:"page_bytes,omitempty"`
		Pages         int    `json:"pages,omitempty"`
		Device        string `json:"device"`
		DeviceBytes   int64  `json:"device_bytes"`
		DeviceFree    int64  `json:"device_free"`
		FitsDevice    bool   `json:"fits_device"`
		HostBytes     int64  `json:"host_bytes"`
		HostAvailable int64  `json:"host_available"`
		FitsHost      bool   `json:"fits_host"`
		// CopiesPerEpoch is absent for a mode that was not planned.
		CopiesPerEpoch *jsonCopies `json:"copies_per_epoch,omitempty"`
		// Prediction is one epoch's predicted time on the mode's
		// profile; absent for a mode without one.
		Prediction *jsonPrediction `json:"prediction,omitempty"`
		Status     string          `json:"status"`
	}
)

// WritePlanJSON writes the memory plan as one JSON document.
func WritePlanJSON(w io.Writer, p bench.MemoryPlan) error {
	doc := jsonPlan{
		Version: JSONVersion, Header: toJSONHeader(p.Header), Blocks: p.Blocks, MinWindow: p.MinWindow,
		Bytes: jsonPlanBytes{Parameters: p.Bytes.Parameters, Gradients: p.Gradients, Optimizer: p.Bytes.Optimizer,
			Saved: p.Bytes.Saved, Arena: p.Bytes.Arena, Inputs: p.Bytes.Inputs},
		Batches: p.Batches, Work: jsonWork{Launches: p.Work.Launches, FLOPs: p.Work.FLOPs, Bytes: p.Work.Bytes, Kernels: []jsonKernelWork{}},
		Modes: []jsonModePlan{},
	}
	for _, k := range p.Work.Kernels {
		doc.Work.Kernels = append(doc.Work.Kernels, jsonKernelWork(k))
	}
	for _, m := range p.Modes {
		var copies *jsonCopies
		if m.Device != "" {
			c := m.Copies
			copies = &jsonCopies{UploadBytes: c.UploadBytes, DownloadBytes: c.DownloadBytes, SyncBytes: c.SyncBytes(), OverlapBytes: c.OverlapBytes, Count: c.Count}
		}
		doc.Modes = append(doc.Modes, jsonModePlan{CopiesPerEpoch: copies, Prediction: toJSONPrediction(m.Prediction),
			Mode: string(m.Mode), Paged: m.Placement.Paged, Policy: string(m.Placement.Cache.Policy), OptimizerOnHost: m.Placement.Cache.OptimizerOnHost,
			Window: m.Footprint.Window, PageBytes: m.Placement.PageSize, Pages: m.Footprint.Pages, Device: m.Device, DeviceBytes: m.Footprint.Device, DeviceFree: m.DeviceFree,
			FitsDevice: m.FitsDevice, HostBytes: m.HostNeed, HostAvailable: m.HostAvailable, FitsHost: m.FitsHost,
			Status: m.Status.String(),
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// planCSVColumns head the plan's CSV columns; sizes are in bytes.
var planCSVColumns = []string{
	"mode", "paged", "policy", "window", "optimizer_on_host", "device",
	"device_need_bytes", "device_free_bytes", "fits_device", "host_need_bytes", "host_available_bytes", "fits_host",
	"copies_upload_bytes", "copies_download_bytes", "copies_overlap_bytes", "copies_count",
	"status", "reason", "predicted_profile", "predicted_s", "bound_s", "limiter", "page_bytes", "pages",
}

// writePlanCSV writes one CSV row per mode and cache policy under a
// heading row, sizes in bytes; the device's figures are empty for a mode
// that was not planned.
func writePlanCSV(w io.Writer, p bench.MemoryPlan) error {
	var recs [][]string
	for _, m := range p.Modes {
		row := []string{string(m.Mode), strconv.FormatBool(m.Placement.Paged), string(m.Placement.Cache.Policy), "", strconv.FormatBool(m.Placement.Cache.OptimizerOnHost), m.Device}
		if m.Device == "" {
			row = append(row, "", "", "", "", "", "", "", "", "", "")
		} else {
			row[3] = strconv.Itoa(m.Footprint.Window)
			row = append(row,
				strconv.FormatInt(m.Footprint.Device, 10), strconv.FormatInt(m.DeviceFree, 10), strconv.FormatBool(m.FitsDevice),
				strconv.FormatInt(m.HostNeed, 10), strconv.FormatInt(m.HostAvailable, 10), strconv.FormatBool(m.FitsHost),
				strconv.FormatInt(m.Copies.UploadBytes, 10), strconv.FormatInt(m.Copies.DownloadBytes, 10),
				strconv.FormatInt(m.Copies.OverlapBytes, 10), strconv.FormatInt(m.Copies.Count, 10))
		}
		row = append(row, string(m.Status.Kind), m.Status.Reason)
		row = append(row, predictionCSV(m.Prediction)...)
		page, pages := "", ""
		if m.Placement.Managed {
			page, pages = strconv.FormatInt(m.Placement.PageSize, 10), strconv.Itoa(m.Footprint.Pages)
		}
		recs = append(recs, append(row, page, pages))
	}
	return writeCSV(w, planCSVColumns, recs)
}
