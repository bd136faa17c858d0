package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
	"gpuz/internal/results"
	"gpuz/internal/termsafe"
	"gpuz/internal/torchplan"
	"gpuz/internal/units"
)

// planKind is a row of what the program holds and does: a kind of bytes
// with its size under each schedule planned (MemoryPlan.Schedules), or,
// comparing schedules, a figure of an epoch's work; and a note.
type planKind struct {
	name  string
	cells []string
	note  string
}

// planKinds returns the kinds of bytes the program holds under each
// schedule, with a note on each; when the plan compares recompute
// settings, also each one's work per epoch, the extra FLOPs noted.
func planKinds(p bench.MemoryPlan) []planKind {
	kinds := []planKind{
		{name: "parameters"},
		{name: "gradients", note: "in the arena, each until its block's update"},
		{name: "optimizer state", note: "Adam's two moments"},
		{name: "saved activations", note: "kept for the backward pass, with their blocks"},
		{name: "arena", note: "activations, gradients and temporaries, by liveness"},
		{name: "inputs", note: "one batch and its target"},
	}
	if bench.Task(p.Header.Task) == bench.TaskTrain && precisionOf(p.Header).Half() {
		kinds[2].note = "Adam's two moments and the fp32 master weights"
	}
	if bench.Task(p.Header.Task) == bench.TaskGenerate {
		kinds[5].note = "both passes' token ids and positions, and the constants (rotary tables)"
	}
	if p.Header.GradAccum > 1 {
		kinds[2].note += ", and each trained parameter's gradient accumulator"
		kinds[5].note = "one micro-batch and its target"
	}
	for _, sp := range p.Schedules {
		b := sp.Bytes
		for i, n := range []int64{b.Parameters, sp.Gradients, b.Optimizer, b.Saved, b.Arena, b.Inputs} {
			kinds[i].cells = append(kinds[i].cells, units.Bytes(n))
		}
	}
	if slices.ContainsFunc(p.Schedules, func(sp bench.SchedulePlan) bool { return sp.Bytes.Frozen > 0 }) {
		// LoRA: the trained parameters (the adapters) and the frozen ones apart.
		frozen := planKind{name: "frozen parameters", note: "the model's own: no gradient, optimizer state or write-back"}
		for _, sp := range p.Schedules {
			frozen.cells = append(frozen.cells, units.Bytes(sp.Bytes.Frozen))
		}
		kinds[0].name = "trained parameters"
		kinds[0].note = units.Count(p.Header.TrainedParams) + " parameters: LoRA's adapters"
		kinds = slices.Insert(kinds, 1, frozen)
	}
	if slices.ContainsFunc(p.Schedules, func(sp bench.SchedulePlan) bool { return sp.Bytes.State > 0 }) {
		// A generation: its caches, allocated whole before the first pass.
		state := planKind{name: "kv cache", note: fmt.Sprintf("each layer's keys and values, %s, %s × %s", kvCacheType(p.Header), plural(int64(p.Header.Context), "position"), plural(int64(p.Header.Batch), "sequence"))}
		for _, sp := range p.Schedules {
			state.cells = append(state.cells, units.Bytes(sp.Bytes.State))
		}
		kinds = slices.Insert(kinds, 1, state)
	}
	if !recomputeShown(p) {
		return kinds
	}
	n := int64(p.Batches)
	work := []planKind{{name: "GFLOP/epoch"}, {name: "traffic/epoch"}, {name: "launches/epoch"}}
	base, hasBase := p.Schedule(levers.RecomputeNone)
	var extra []string
	for _, sp := range p.Schedules {
		w := sp.Work
		work[0].cells = append(work[0].cells, units.Sig3(float64(n*w.FLOPs)/1e9))
		work[1].cells = append(work[1].cells, units.Bytes(n*w.Bytes))
		work[2].cells = append(work[2].cells, units.Count(n*w.Launches))
		if d := w.FLOPs - base.Work.FLOPs; hasBase && d > 0 && base.Work.FLOPs > 0 {
			extra = append(extra, fmt.Sprintf("%s: %+.1f%%", sp.Recompute, 100*float64(d)/float64(base.Work.FLOPs)))
		}
	}
	work[1].note = fmt.Sprintf("an epoch is %d batches", n)
	if n == 1 {
		work[1].note = "an epoch is 1 batch"
	}
	if extra != nil {
		work[0].note = strings.Join(extra, ", ") + ", the forward run again"
	}
	return append(kinds, work...)
}

// recomputeShown reports whether the plan's tables name each row's
// recompute setting: when it plans several, or one that recomputes.
func recomputeShown(p bench.MemoryPlan) bool {
	return len(p.Schedules) > 1 || (len(p.Schedules) == 1 && p.Schedules[0].Recompute.On())
}

// minWindow is the most blocks a step of any schedule planned needs.
func minWindow(p bench.MemoryPlan) int {
	n := 0
	for _, sp := range p.Schedules {
		n = max(n, sp.MinWindow)
	}
	return n
}

// planNotes are the lines under the kinds: the blocks a step needs, the
// work per epoch (in the kinds when the plan compares recompute settings),
// that recompute changes nothing in evaluation, and a 16-bit precision.
func planNotes(p bench.MemoryPlan) []string {
	lines := []string{"a step needs at most " + plural(int64(minWindow(p)), "block") + " resident"}
	switch {
	case bench.Task(p.Header.Task) == bench.TaskGenerate && len(p.Schedules) > 0:
		w := p.Schedules[0].Work
		lines = append(lines, fmt.Sprintf("one prefill pass and one decode pass together: %s GFLOP, %s of device traffic, %s op launches",
			units.Sig3(float64(w.FLOPs)/1e9), units.Bytes(w.Bytes), units.Count(w.Launches)))
	case !recomputeShown(p) && len(p.Schedules) > 0:
		lines = append(lines, workText(p.Schedules[0].Work, p.Batches))
	}
	if bench.Task(p.Header.Task) == bench.TaskEval && slices.ContainsFunc(p.Schedules, func(sp bench.SchedulePlan) bool { return sp.Recompute.On() }) {
		lines = append(lines, "recompute applies to training: evaluating saves no activation, so blocks changes nothing")
	}
	if pr := precisionOf(p.Header); pr.Half() {
		lines = append(lines, precisionNote(pr)+"; each kind's bytes at the precision it is stored in")
	}
	if note := weightsNote(p.Header); note != "" {
		lines = append(lines, note)
	}
	return lines
}

// planTitle is the plan's first line, naming a 16-bit precision and the
// attention of a workload with attention layers:
// "Memory plan of gpuz linear eval (scale full, bf16): 12 blocks, batch 30",
// "Memory plan of gpuz attention train (scale full, fused attention): …".
// The model's name, a file's or a directory's for llm, is printed escaped
// (termsafe), as the run's header prints it.
func planTitle(p bench.MemoryPlan) string {
	h := p.Header
	scale := "scale " + h.Scale
	if pr := precisionOf(h); pr.Half() {
		scale += ", " + pr.String()
	}
	if h.Attention != "" {
		scale += ", " + h.Attention + " attention"
	}
	if h.LoRA != "" {
		scale += ", LoRA " + h.LoRA
	}
	batch := fmt.Sprint(h.Batch)
	if h.GradAccum > 1 {
		batch += fmt.Sprintf(" (%d micro-batches of %d, gradients accumulated)", h.GradAccum, h.Batch/h.GradAccum)
	}
	return fmt.Sprintf("Memory plan of gpuz %s %s (%s): %d blocks, batch %s%s", termsafe.String(h.Model), h.Task, scale, p.Blocks, batch, sizesText(h))
}

// targetHostNote says that a plan or a fit was made for a target host's
// memory (--host-memory), "" when it was made for this machine's.
func targetHostNote(h bench.Header) string {
	if h.HostMemorySource != bench.TargetHostBinding {
		return ""
	}
	return "host: the " + units.Bytes(h.HostMemory) + " of the host planned for (--host-memory), not this machine's; a simulated GPU's memory is the card's, apart from it"
}

// sizesText says a header's sequence sizes after its batch: a
// generation's prompt, tokens and context, another workload's sequence
// length; "" for a workload without sequences.
func sizesText(h bench.Header) string {
	switch {
	case bench.Task(h.Task) == bench.TaskGenerate:
		return fmt.Sprintf(", prompt %d, %d tokens, context %d", h.Prompt, h.Tokens, h.Context)
	case h.SeqLen > 0:
		return fmt.Sprintf(", sequences of %d", h.SeqLen)
	}
	return ""
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
			writePlanKindsText(b, p)
			if o.Framework != nil {
				writeFrameworkText(b, p, o.Framework)
			}
			writePlanTables(b, p, o.Wide, table.writeText)
			return nil
		},
		markdown: func(b *strings.Builder) error {
			b.WriteString(planTitle(p) + "\n\n")
			planKindsTable(p).writeMarkdown(b)
			b.WriteString("\n")
			if o.Framework != nil {
				b.WriteString(frameworkHeading(o.Framework) + "\n\n")
				frameworkTable(p, o.Framework).writeMarkdown(b)
				b.WriteString("\n")
			}
			writePlanTables(b, p, o.Wide, table.writeMarkdown)
			return nil
		},
		csv:  func(b *strings.Builder) error { return writePlanCSV(b, p) },
		json: func(w io.Writer) error { return WritePlanJSONFramework(w, p, o.Framework) },
	})
}

// writePlanKindsText writes the plan's title and what the program holds by
// kind as text: a column per schedule (headed by its recompute setting
// when there are several), each kind's note after its cells, the plan's
// notes wrapped below, then a blank line.
func writePlanKindsText(b *strings.Builder, p bench.MemoryPlan) {
	b.WriteString(planTitle(p) + "\n")
	if recomputeShown(p) {
		line := fmt.Sprintf("  %-18s", "recompute")
		for _, sp := range p.Schedules {
			line += fmt.Sprintf(" %10s", sp.Recompute)
		}
		b.WriteString(line + "\n")
	}
	for _, k := range planKinds(p) {
		line := fmt.Sprintf("  %-18s", k.name)
		for _, c := range k.cells {
			line += fmt.Sprintf(" %10s", c)
		}
		if k.note != "" {
			line += "   " + k.note
		}
		b.WriteString(line + "\n")
	}
	for _, note := range planNotes(p) {
		for _, line := range wrap(note, maxWidth-2) {
			b.WriteString("  " + line + "\n")
		}
	}
	b.WriteString("\n")
}

// planKindsTable is what the program holds by kind as Markdown shows it:
// a row per kind, a column per schedule (headed by its recompute setting
// when there are several, else "bytes"), the kind's note last, and the
// plan's notes below.
func planKindsTable(p bench.MemoryPlan) table {
	kinds := table{columns: []column{{"kind", true}}}
	for _, sp := range p.Schedules {
		name := "bytes"
		if recomputeShown(p) {
			name = "recompute " + sp.Recompute.String()
		}
		kinds.columns = append(kinds.columns, column{name, false})
	}
	kinds.columns = append(kinds.columns, column{"note", true})
	for _, k := range planKinds(p) {
		row := []string{k.name}
		row = append(row, k.cells...)
		kinds.rows = append(kinds.rows, append(row, k.note))
	}
	kinds.notes = planNotes(p)
	return kinds
}

// writePlanTables writes the tables that end a plan, each by write
// (table.writeText or table.writeMarkdown): the plan table, a blank line,
// then a generation's table for a generation and the copies' otherwise.
func writePlanTables(b *strings.Builder, p bench.MemoryPlan, wide bool, write func(table, *strings.Builder)) {
	write(planTable(p, wide), b)
	b.WriteString("\n")
	if bench.Task(p.Header.Task) == bench.TaskGenerate {
		write(generationTable(p, wide), b)
	} else {
		write(copiesTable(p, wide), b)
	}
}

// tableForm is the placement's description in a plan's table: Long in
// the wide one, Short in the narrow one.
func tableForm(wide bool) engine.Form {
	if wide {
		return engine.Long
	}
	return engine.Short
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
	names := []string{"mode", "recompute", "placement", "device", "device need", "free", "host need", "available", "fits"}
	if wide {
		names = []string{"mode", "recompute", "placement", "device", "device need", "device free", "fits device", "host need", "host available", "fits host"}
	}
	shown := recomputeShown(p)
	for _, name := range names {
		if (name == "device" && !deviceCol) || (name == "recompute" && !shown) {
			continue
		}
		left := name == "mode" || name == "recompute" || name == "placement" || name == "device" || (name == "fits" && !wide)
		t.columns = append(t.columns, column{name, left})
	}
	for _, m := range p.Modes {
		fp := m.Footprint
		if m.Device == "" {
			fp.Window = 0
		}
		row := []string{string(m.Mode)}
		if shown {
			row = append(row, m.Recompute.String())
		}
		row = append(row, m.Placement.Describe(fp, p.Blocks, tableForm(wide)))
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
	if note := targetHostNote(p.Header); note != "" {
		t.notes = append(t.notes, note)
	}
	if on := groupModes(devices, modes); !deviceCol && on != "" {
		t.notes = append(t.notes, "devices: "+on)
	}
	if take := p.Header.TakeBytes; take > 0 {
		t.notes = append(t.notes, fmt.Sprintf("free: the device's free memory less the %s that --take holds in a run; the plan holds nothing", units.Bytes(take)))
	}
	t.notes = append(t.notes, ns.lines...)
	return t
}

// workText says an epoch of batches' device work, the same in every mode
// (Adam's updates counted on the device even where the optimizer runs on
// the host): "per epoch (2 batches): 188 GFLOP, 40.1 GiB of device
// traffic, 2.40k op launches".
func workText(w engine.Work, batches int) string {
	n := int64(batches)
	word := fmt.Sprintf("%d batches", n)
	if n == 1 {
		word = "1 batch"
	}
	return fmt.Sprintf("per epoch (%s): %s GFLOP, %s of device traffic, %s op launches",
		word, units.Sig3(float64(n*w.FLOPs)/1e9), units.Bytes(n*w.Bytes), units.Count(n*w.Launches))
}

// copiesTable builds the table of each mode's copies per epoch, counted
// without running: the bytes up and down and the number of copies; wide
// adds the bytes the steps wait for and those that may overlap compute.
// Where a mode has a prediction (a device with a profile, --host-profile
// for cpu), a "predicted" column gives the model time per epoch with its
// roofline bound, and wide adds what limits it.
func copiesTable(p bench.MemoryPlan, wide bool) table {
	shown := recomputeShown(p)
	t := table{columns: []column{{"mode", true}}}
	if shown {
		t.columns = append(t.columns, column{"recompute", true})
	}
	t.columns = append(t.columns, column{"placement", true}, column{"up/epoch", false}, column{"down/epoch", false}, column{"copies/epoch", false})
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
		row := []string{string(m.Mode)}
		if shown {
			row = append(row, m.Recompute.String())
		}
		row = append(row, m.Placement.Describe(m.Footprint, p.Blocks, tableForm(wide)))
		switch {
		case !m.Mode.Copies(): // the host copies nothing between devices
			row = append(row, na, na, na)
			if wide {
				row = append(row, na, na)
			}
		default:
			row = append(row, units.Bytes(m.Copies.UploadBytes), units.Bytes(m.Copies.DownloadBytes), units.Count(m.Copies.Count))
			if wide {
				row = append(row, units.Bytes(m.Copies.SyncBytes()), units.Bytes(m.Copies.OverlapBytes))
			}
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
	note := "host↔device copies of an epoch after the first"
	if slices.ContainsFunc(p.Modes, func(m bench.ModePlan) bool {
		c, paged := m.Placement.Paging()
		return m.Device != "" && paged && c.Policy == cache.Auto
	}) {
		note += "; the auto policy's prefetch uploads may overlap compute on a device with a copy stream"
	}
	if slices.ContainsFunc(p.Modes, func(m bench.ModePlan) bool { return m.Device != "" && !m.Mode.Copies() }) {
		note += "; the cpu mode copies nothing between devices (-)"
	}
	t.notes = []string{note}
	if note := predictionNote(modes, preds); note != "" {
		t.notes = append(t.notes, note)
	}
	return t
}

// The plan's JSON document. Sizes are in bytes.
type (
	// jsonPlan is the plan: its figures at the top level are the first
	// schedule's (as before a plan compared several), Schedules each
	// recompute setting's.
	jsonPlan struct {
		Version int            `json:"version"`
		Header  results.Header `json:"header"`
		jsonFigures
		Blocks    int            `json:"blocks"`
		Batches   int            `json:"batches"`
		Schedules []jsonSchedule `json:"schedules"`
		Modes     []jsonModePlan `json:"modes"`
		// Framework is PyTorch's plan of the same step (--framework
		// torch), absent for gpuz's alone.
		Framework *jsonFramework `json:"framework,omitempty"`
	}
	// jsonFigures are what one schedule holds and does.
	jsonFigures struct {
		Bytes     jsonPlanBytes `json:"bytes"`
		MinWindow int           `json:"min_window"`
		Work      jsonWork      `json:"work_per_batch"`
	}
	jsonSchedule struct {
		Recompute string `json:"recompute"`
		jsonFigures
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
		// Half: 16-bit products (tensor cores on a GPU); omitted when not.
		Half bool `json:"half,omitempty"`
	}
	jsonCopies struct {
		UploadBytes   int64 `json:"upload_bytes"`
		DownloadBytes int64 `json:"download_bytes"`
		SyncBytes     int64 `json:"sync_bytes"`
		OverlapBytes  int64 `json:"overlap_bytes"`
		Count         int64 `json:"count"`
		// RemoteBytes is what the kernels access in place across the bus
		// (managed, the host advised); absent when 0.
		RemoteBytes int64 `json:"remote_bytes,omitempty"`
	}
	jsonPlanBytes struct {
		Parameters int64 `json:"parameters"`
		// Frozen is the frozen parameters (LoRA's base weights), absent
		// when none: Parameters is then the trained ones alone.
		Frozen int64 `json:"frozen_parameters,omitempty"`
		// KVCache is a generation's key-value caches (the blocks' state),
		// absent for the other tasks.
		KVCache   int64 `json:"kv_cache,omitempty"`
		Gradients int64 `json:"gradients"`
		Optimizer int64 `json:"optimizer"`
		Saved     int64 `json:"saved_activations"`
		Arena     int64 `json:"arena"`
		Inputs    int64 `json:"inputs"`
	}
	jsonModePlan struct {
		Mode            string `json:"mode"`
		Recompute       string `json:"recompute"`
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
		DeviceTotal   int64  `json:"device_total"`
		FitsDevice    bool   `json:"fits_device"`
		HostBytes     int64  `json:"host_bytes"`
		HostAvailable int64  `json:"host_available"`
		FitsHost      bool   `json:"fits_host"`
		// CopiesPerEpoch is absent for a mode that was not planned.
		CopiesPerEpoch *jsonCopies `json:"copies_per_epoch,omitempty"`
		// Prediction is one epoch's predicted time on the mode's
		// profile; absent for a mode without one.
		Prediction *results.Prediction `json:"prediction,omitempty"`
		Status     string              `json:"status"`
	}
)

// WritePlanJSON writes the memory plan as one JSON document.
func WritePlanJSON(w io.Writer, p bench.MemoryPlan) error { return WritePlanJSONFramework(w, p, nil) }

// WritePlanJSONFramework writes the memory plan as one JSON document,
// with PyTorch's plan of the same step under "framework" when tp is not
// nil.
func WritePlanJSONFramework(w io.Writer, p bench.MemoryPlan, tp *torchplan.Plan) error {
	doc := jsonPlan{
		Version: results.Version, Header: p.Header, Blocks: p.Blocks, Batches: p.Batches,
		Schedules: []jsonSchedule{}, Modes: []jsonModePlan{}, Framework: frameworkJSON(tp),
	}
	for _, sp := range p.Schedules {
		b := sp.Bytes
		js := jsonSchedule{Recompute: sp.Recompute.String(), jsonFigures: jsonFigures{MinWindow: sp.MinWindow,
			Bytes: jsonPlanBytes{Parameters: b.Parameters, Frozen: b.Frozen, KVCache: b.State, Gradients: sp.Gradients, Optimizer: b.Optimizer, Saved: b.Saved, Arena: b.Arena, Inputs: b.Inputs},
			Work:  jsonWork{Launches: sp.Work.Launches, FLOPs: sp.Work.FLOPs, Bytes: sp.Work.Bytes, Kernels: []jsonKernelWork{}}}}
		for _, k := range sp.Work.Kernels {
			js.Work.Kernels = append(js.Work.Kernels, jsonKernelWork(k))
		}
		doc.Schedules = append(doc.Schedules, js)
	}
	if len(doc.Schedules) > 0 {
		doc.jsonFigures = doc.Schedules[0].jsonFigures
	}
	for _, m := range p.Modes {
		c, paged := m.Placement.Paging()
		var copies *jsonCopies
		if m.Device != "" {
			c := copiesJSON(m.Copies)
			copies = &c
		}
		doc.Modes = append(doc.Modes, jsonModePlan{CopiesPerEpoch: copies, Prediction: m.Prediction.Document(),
			Mode: string(m.Mode), Recompute: m.Recompute.String(), Paged: paged, Policy: string(c.Policy), OptimizerOnHost: c.OptimizerOnHost,
			Window: m.Footprint.Window, PageBytes: m.Placement.PageBytes(), Pages: m.Footprint.Pages, Device: m.Device, DeviceBytes: m.Footprint.Device,
			DeviceFree: m.DeviceFree, DeviceTotal: m.DeviceTotal,
			FitsDevice: m.FitsDevice, HostBytes: m.HostNeed, HostAvailable: m.HostAvailable, FitsHost: m.FitsHost,
			Status: m.Status.String(),
		})
	}
	return encodeJSON(w, doc)
}

// copiesJSON is c as the plan's and the fit's JSON write an epoch's
// copies.
func copiesJSON(c engine.Copies) jsonCopies {
	return jsonCopies{UploadBytes: c.UploadBytes, DownloadBytes: c.DownloadBytes, SyncBytes: c.SyncBytes(),
		OverlapBytes: c.OverlapBytes, Count: c.Count, RemoteBytes: c.RemoteBytes}
}

// planCSVColumns head the plan's CSV columns; sizes are in bytes.
var planCSVColumns = []string{
	"mode", "paged", "policy", "window", "optimizer_on_host", "device",
	"device_need_bytes", "device_free_bytes", "fits_device", "host_need_bytes", "host_available_bytes", "fits_host",
	"copies_upload_bytes", "copies_download_bytes", "copies_overlap_bytes", "copies_count",
	"status", "reason", "predicted_profile", "predicted_s", "bound_s", "limiter", "page_bytes", "pages",
	"recompute", "saved_activation_bytes", "flops_per_epoch", "take_bytes",
	"lora_rank", "trained_param_bytes", "frozen_param_bytes",
}

// writePlanCSV writes one CSV row per mode and cache policy under a
// heading row, sizes in bytes; the device's figures are empty for a mode
// that was not planned, LoRA's rank for a run without LoRA.
func writePlanCSV(w io.Writer, p bench.MemoryPlan) error {
	var recs [][]string
	for _, m := range p.Modes {
		c, paged := m.Placement.Paging()
		row := []string{string(m.Mode), strconv.FormatBool(paged), string(c.Policy), "", strconv.FormatBool(c.OptimizerOnHost), m.Device}
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
		if size := m.Placement.PageBytes(); size > 0 {
			page, pages = strconv.FormatInt(size, 10), strconv.Itoa(m.Footprint.Pages)
		}
		sp, _ := p.Schedule(m.Recompute)
		lora := ""
		if p.Header.LoRARank > 0 {
			lora = strconv.Itoa(p.Header.LoRARank)
		}
		recs = append(recs, append(row, page, pages, m.Recompute.String(), strconv.FormatInt(sp.Bytes.Saved, 10),
			strconv.FormatInt(int64(p.Batches)*sp.Work.FLOPs, 10), strconv.FormatInt(p.Header.TakeBytes, 10),
			lora, strconv.FormatInt(sp.Bytes.Parameters, 10), strconv.FormatInt(sp.Bytes.Frozen, 10)))
	}
	return writeCSV(w, planCSVColumns, recs)
}
