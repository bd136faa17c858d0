package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"gpuz/internal/bench"
	"gpuz/internal/engine"
	"gpuz/internal/units"
)

// planColumns head the plan table's columns.
var planColumns = []string{
	"mode", "placement", "device", "device need", "device free", "fits device", "host need", "host available", "fits host",
}

// WritePlan writes a memory plan: what the program holds by kind, then one
// row per mode and cache policy with the bytes it needs on the device and on
// the host and whether they fit.
func WritePlan(w io.Writer, p bench.MemoryPlan) error {
	var b bytes.Buffer
	h := p.Header
	fmt.Fprintf(&b, "Memory plan of gpuz %s %s (scale %s): %d blocks, batch %d\n", h.Model, h.Task, h.Scale, p.Blocks, h.Batch)
	for _, row := range []struct {
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
	} {
		fmt.Fprintf(&b, "  %-18s %10s", row.name, units.Bytes(row.bytes))
		if row.note != "" {
			fmt.Fprintf(&b, "   %s", row.note)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "  a step needs at most %s resident\n\n", plural(int64(p.MinWindow), "block"))

	var rows [][]string
	for _, m := range p.Modes {
		rows = append(rows, planRow(m, p.Blocks))
	}
	if err := writeTable(&b, "plan", planColumns, []int{0, 1, 2}, rows); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// placementText describes a placement in a few words.
func placementText(pl engine.Placement, window, blocks int) string {
	if !pl.Paged {
		return "all blocks resident"
	}
	s := fmt.Sprintf("%s policy, %d/%d blocks", pl.Policy, window, blocks)
	if pl.OptimizerOnHost {
		s += ", optimizer on host"
	}
	return s
}

func planRow(m bench.ModePlan, blocks int) []string {
	if m.Device == "" {
		return []string{string(m.Mode), placementText(m.Placement, 0, blocks), "-", "-", "-", "-", "-", "-", m.Status.String()}
	}
	yesNo := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	return []string{
		string(m.Mode), placementText(m.Placement, m.Footprint.Window, blocks), m.Device,
		units.Bytes(m.Footprint.Device), units.Bytes(m.DeviceFree), yesNo(m.FitsDevice),
		units.Bytes(m.HostNeed), units.Bytes(m.HostAvailable), yesNo(m.FitsHost),
	}
}

// The plan's JSON document. Sizes are in bytes.
type (
	jsonPlan struct {
		Version   int            `json:"version"`
		Header    jsonHeader     `json:"header"`
		Bytes     jsonPlanBytes  `json:"bytes"`
		Blocks    int            `json:"blocks"`
		MinWindow int            `json:"min_window"`
		Modes     []jsonModePlan `json:"modes"`
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
		Device          string `json:"device"`
		DeviceBytes     int64  `json:"device_bytes"`
		DeviceFree      int64  `json:"device_free"`
		FitsDevice      bool   `json:"fits_device"`
		HostBytes       int64  `json:"host_bytes"`
		HostAvailable   int64  `json:"host_available"`
		FitsHost        bool   `json:"fits_host"`
		Status          string `json:"status"`
	}
)

// WritePlanJSON writes the memory plan as one JSON document.
func WritePlanJSON(w io.Writer, p bench.MemoryPlan) error {
	doc := jsonPlan{
		Version: JSONVersion, Header: toJSONHeader(p.Header), Blocks: p.Blocks, MinWindow: p.MinWindow,
		Bytes: jsonPlanBytes{Parameters: p.Bytes.Parameters, Gradients: p.Gradients, Optimizer: p.Bytes.Optimizer,
			Saved: p.Bytes.Saved, Arena: p.Bytes.Arena, Inputs: p.Bytes.Inputs},
		Modes: []jsonModePlan{},
	}
	for _, m := range p.Modes {
		doc.Modes = append(doc.Modes, jsonModePlan{
			Mode: string(m.Mode), Paged: m.Placement.Paged, Policy: string(m.Placement.Policy), OptimizerOnHost: m.Placement.OptimizerOnHost,
			Window: m.Footprint.Window, Device: m.Device, DeviceBytes: m.Footprint.Device, DeviceFree: m.DeviceFree,
			FitsDevice: m.FitsDevice, HostBytes: m.HostNeed, HostAvailable: m.HostAvailable, FitsHost: m.FitsHost,
			Status: m.Status.String(),
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
