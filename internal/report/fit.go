package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"gpuz/internal/bench"
	"gpuz/internal/fit"
	"gpuz/internal/quant"
	"gpuz/internal/results"
	"gpuz/internal/termsafe"
	"gpuz/internal/units"
)

// FitKind is the "kind" of gpuz fit's JSON document.
const FitKind = "fit"

// fitTop is how many ranked configurations the fit's tables show; CSV and
// JSON hold every one that fits.
const fitTop = 10

// WriteFitAs writes a fit's answer in o's format: as text or Markdown, a
// title line, the table of the fastest configurations that fit (fitTop,
// and the cpu's row wherever it ranks), the command line of each and the
// recommendation; as CSV, one row per configuration that fits; as JSON,
// the document of writeFitJSON.
func WriteFitAs(w io.Writer, r fit.Result, o Options) error {
	return writeAs(w, o.Format, formatWriters{
		text:     func(b *strings.Builder) error { writeFitTable(b, r, false); return nil },
		markdown: func(b *strings.Builder) error { writeFitTable(b, r, true); return nil },
		csv:      func(b *strings.Builder) error { return writeFitCSV(b, r) },
		json:     func(w io.Writer) error { return writeFitJSON(w, r, nil) },
	})
}

// WriteFitJSON writes the fit and, when v is not nil, its verification
// (under "verify") as one JSON document.
func WriteFitJSON(w io.Writer, r fit.Result, v *fit.Verification) error {
	return writeFitJSON(w, r, v)
}

// writeFitTable writes the fit's title, table, command lines and
// recommendation as text or, with markdown, as a GitHub table with the
// command lines in a code block.
func writeFitTable(b *strings.Builder, r fit.Result, markdown bool) {
	t, cmds := fitTable(r)
	b.WriteString(fitTitle(r) + "\n")
	if !markdown {
		t.writeText(b)
		b.WriteString("commands:\n")
		for _, c := range cmds {
			b.WriteString("  " + c + "\n")
		}
		for _, l := range wrap("recommended: "+termsafe.String(r.Reason()), maxWidth) {
			b.WriteString(l + "\n")
		}
		return
	}
	b.WriteString("\n")
	t.writeMarkdown(b)
	b.WriteString("\n```sh\n" + strings.Join(cmds, "\n") + "\n```\n\nrecommended: " + termsafe.String(r.Reason()) + "\n")
}

// fitTitle is the fit's first line: the workload, the device and its
// memory, and how many configurations were searched and fit. The model's
// and the device's names are printed escaped (termsafe): a file's or a
// directory's name, a driver's.
func fitTitle(r fit.Result) string {
	h := r.Header
	batch := fmt.Sprintf("batch %d", h.Batch)
	if len(r.Batches) > 0 {
		batch = "batches " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(r.Batches)), ","), "[]")
	}
	s := fmt.Sprintf("Fit of gpuz %s %s (scale %s; %s%s)", termsafe.String(h.Model), h.Task, h.Scale, batch, sizesText(h))
	if r.Device != "" {
		taken := ""
		if r.TakeBytes > 0 {
			taken = " after " + units.Bytes(r.TakeBytes) + " taken"
		}
		s += fmt.Sprintf(" on %s: %s free%s, %s within the %s%% margin", termsafe.String(r.Device), units.Bytes(r.DeviceFree), taken,
			units.Bytes(r.Budget), strconv.FormatFloat(r.MarginPercent, 'g', -1, 64))
	}
	return s + fmt.Sprintf("; %d configurations searched, %d fit", r.Searched, len(r.Ranked)+len(r.Unranked))
}

// fitRows returns the rows a fit's tables show, each with its rank (0 for
// an unranked one): the fitTop fastest, each cache policy and optimizer
// place once at its fastest window, the cpu wherever it ranks or
// unranked, and without any ranked row the first unranked ones.
func fitRows(r fit.Result) (rows []fit.Entry, ranks []int) {
	shown, modes := map[string]bool{}, map[bench.Mode]bool{}
	// A generation's table shows each mode's fastest too: which way to
	// offload wins is its question.
	everyMode := bench.Task(r.Header.Task) == bench.TaskGenerate
	for i, e := range r.Ranked {
		family := e.Family().String()
		if shown[family] || (len(rows) >= fitTop && !e.Mode.OnHost() && !(everyMode && !modes[e.Mode])) {
			continue
		}
		shown[family], modes[e.Mode] = true, true
		rows, ranks = append(rows, e), append(ranks, i+1)
	}
	for i, e := range r.Unranked {
		family := e.Family().String()
		switch {
		case e.Mode.OnHost(),
			len(r.Ranked) == 0 && i < fitTop,
			// a device without a profile: each family once, as the ranked
			e.Mode.Predicted() && !shown[family] && len(rows) < 2*fitTop:
			shown[family] = true
			rows, ranks = append(rows, e), append(ranks, 0)
		}
	}
	return rows, ranks
}

// fitTable builds the fit's table and its rows' command lines, numbered
// as the rows: the rank ("-" unranked), the configuration, its device and
// host need, the predicted epoch time with its bound, and what limits it.
// Its notes say what was predicted, what is unranked and why, and how to
// rank the cpu.
func fitTable(r fit.Result) (table, []string) {
	rows, ranks := fitRows(r)
	var models []float64
	for _, e := range rows {
		if e.Plan.Prediction != nil {
			models = append(models, e.Predicted())
		}
	}
	u := timeUnitFor(models)
	generate := bench.Task(r.Header.Task) == bench.TaskGenerate
	t := table{columns: []column{{"#", false}, {"configuration", true}, {"device need", false}, {"host need", false},
		{"predicted (" + u.name + ")", false}, {"limiter", true}}}
	if generate {
		t.columns = append(t.columns[:4], column{"1st token (s)", false}, column{"decode tok/s", false}, column{"bound by", true})
	}
	var cmds, modes []string
	var preds []*bench.Prediction
	for i, e := range rows {
		rank, pred, limiter, dev := "-", na, na, na
		if ranks[i] > 0 {
			rank = strconv.Itoa(ranks[i])
		}
		if p := e.Plan.Prediction; p != nil && p.Limiter != "" {
			pred, limiter = predictedCell(u, p), p.Limiter
		} else if p != nil {
			pred = predictedCell(u, p)
		}
		if !e.Mode.OnHost() {
			dev = units.Bytes(e.Plan.Footprint.Device)
		}
		row := []string{rank, e.Candidate.String(), dev, units.Bytes(e.Plan.HostNeed), pred, limiter}
		if generate {
			row = append(row[:4], na, na, na)
			if g := generationOf(e.Plan.Prediction); g != nil {
				row[4], row[5], row[6] = sig(g.Prefill.Model.Seconds(), 3), sig(g.DecodeTokensPerSecond(), 3), g.DecodeLimit
			}
		}
		t.rows = append(t.rows, row)
		cmds = append(cmds, fmt.Sprintf("%-2s %s", rank, termsafe.String(e.Command))) // --model's path
		modes, preds = append(modes, string(e.Mode)), append(preds, e.Plan.Prediction)
	}
	t.notes = []string{"each cache policy at its fastest window (every configuration that fits: --format csv or json)",
		"sizes in binary units: 1 KiB = 1024 B, MiB, GiB; host need: the data set, the host's share and, on sim, the device's"}
	if note := targetHostNote(r.Header); note != "" {
		t.notes[1] = "sizes in binary units: 1 KiB = 1024 B, MiB, GiB; host need: the data set and the host's share"
		t.notes = append(t.notes, note)
	}
	switch note := predictionNote(modes, preds); {
	case generate && note != "":
		t.notes = append(t.notes, fmt.Sprintf("ranked by the predicted decode tokens/s, a decode pass at a full cache of %d positions; 1st token: the prompt's pass of %d tokens", r.Header.Context, r.Header.Prompt),
			strings.Replace(strings.Replace(note, "model time per epoch", "model times", 1), "with the roofline bound (≥) that no such device beats", "a hybrid placement's host layers on the host profile", 1))
	case note != "":
		t.notes = append(t.notes, note)
	}
	if len(r.Batches) > 0 && !generate {
		t.notes = append(t.notes, fmt.Sprintf("batches ranked by the predicted time of an epoch of the same %d samples: time per sample", r.Header.Samples))
	}
	if note := rankOrderNote(rows, ranks); note != "" {
		t.notes = append(t.notes, note)
	}
	hybrid, smallest := 0, fit.Entry{}
	for _, e := range r.Unranked {
		if e.Mode.Predicted() {
			continue
		}
		hybrid++
		if smallest.Mode == "" || e.Plan.Footprint.Device < smallest.Plan.Footprint.Device {
			smallest = e
		}
	}
	if hybrid > 0 {
		t.notes = append(t.notes, fmt.Sprintf("%s fit, unranked (the model does not predict the hybrid mode yet); the smallest device need: %s, %s",
			plural(int64(hybrid), "hybrid placement"), smallest.Candidate, units.Bytes(smallest.Plan.Footprint.Device)))
	}
	if n := len(r.UnrankedOnDevice()); n > 0 && generate && r.Ranked != nil && slices.ContainsFunc(r.Ranked, func(e fit.Entry) bool { return !e.Mode.OnHost() }) {
		t.notes = append(t.notes, fmt.Sprintf("%s fit, unranked: the generation's model does not price the managed mode's page faults", plural(int64(n), "managed configuration")))
	} else if n > 0 {
		t.notes = append(t.notes, fmt.Sprintf("%s on %s fit, unranked: it has no profile (sim:PROFILE has one: gpuz devices --profiles; or a profile file: gpuz calibrate)",
			plural(int64(n), "configuration"), r.Device))
	}
	if note := weightKindsNote(rows); note != "" {
		t.notes = append(t.notes, note)
	}
	if r.HostProfile == "" && r.CPU.Mode != "" {
		t.notes = append(t.notes, "the cpu is unranked: no host profile; run gpuz calibrate to measure this machine's, or give --host-profile NAME|FILE")
	}
	return t, cmds
}

// weightKindsNote says what the quantized kinds among rows cost: their
// bits a weight, the one figure of their accuracy gpuz gives; "" when no
// row stores its weights quantized.
func weightKindsNote(rows []fit.Entry) string {
	var kinds []quant.Kind
	for _, e := range rows {
		if e.Weights.Quantized() && !slices.Contains(kinds, e.Weights) {
			kinds = append(kinds, e.Weights)
		}
	}
	if len(kinds) == 0 {
		return ""
	}
	slices.Sort(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %.3g", k, k.BitsPerWeight())
	}
	return "quantized weights, bits a weight: " + strings.Join(parts, ", ") + " (the layers' projections and, for ggml's kinds, the embedding; the head in floats); they change the outputs, and gpuz measures memory and time, not the accuracy they cost"
}

// rankOrderNote explains a ranked row printed above a faster one (issue
// 44 item 11): the ranking's rules, naming the first such pair; "" when
// the ranked rows' predicted times fall in order.
func rankOrderNote(rows []fit.Entry, ranks []int) string {
	for i, a := range rows {
		for j := i + 1; j < len(rows); j++ {
			b := rows[j]
			if ranks[i] == 0 || ranks[j] == 0 || a.Plan.Prediction == nil || b.Plan.Prediction == nil || !(b.RankTime() < a.RankTime()) {
				continue
			}
			why := fmt.Sprintf("within %.0f%% the simpler first", 100*fit.TieFraction)
			if b.ChangesResults() && !a.ChangesResults() {
				why = fmt.Sprintf("#%d changes the results (16 bits, or the other attention) and is not faster by more than %.0f%%", ranks[j], 100*fit.ResultsGainFraction)
			}
			return fmt.Sprintf("#%d ranks above the faster #%d: %s; fit ranks the fastest first, except that a configuration that changes the results must be more than %.0f%% faster to rank above one that keeps them, and within %.0f%% the simpler comes first (docs/fit.md)",
				ranks[i], ranks[j], why, 100*fit.ResultsGainFraction, 100*fit.TieFraction)
		}
	}
	return ""
}

// fitCSVColumns head the fit's CSV columns; sizes in bytes.
var fitCSVColumns = append([]string{
	"rank", "mode", "configuration", "policy", "window", "optimizer_on_host", "place", "managed_advise_host", "recompute",
	"device", "device_need_bytes", "host_need_bytes", "copies_upload_bytes", "copies_download_bytes",
}, append(predictionCSVColumns, "command", "precision", "lora_rank", "trained_params", "grad_accum", "batch")...)

// writeFitCSV writes one row per configuration that fits, the ranked ones
// first (rank from 1; 0 unranked).
func writeFitCSV(w io.Writer, r fit.Result) error {
	var recs [][]string
	add := func(rank int, e fit.Entry) {
		s, window := e.Placement().Settings(), ""
		if s.Window > 0 {
			window = strconv.Itoa(s.Window)
		}
		rec := []string{strconv.Itoa(rank), string(e.Mode), e.Candidate.String(), string(s.Policy), window,
			strconv.FormatBool(s.OptimizerOnHost), s.Blocks, strconv.FormatBool(s.AdviseHost), e.Recompute.String(),
			e.Plan.Device, strconv.FormatInt(e.Plan.Footprint.Device, 10), strconv.FormatInt(e.Plan.HostNeed, 10),
			strconv.FormatInt(e.Plan.Copies.UploadBytes, 10), strconv.FormatInt(e.Plan.Copies.DownloadBytes, 10)}
		lora, trained := "", ""
		if e.LoRA.On() {
			lora, trained = strconv.Itoa(e.LoRA.Rank), strconv.FormatInt(e.Trained, 10)
		}
		batch := e.Batch
		if batch == 0 {
			batch = r.Header.Batch
		}
		recs = append(recs, append(append(rec, predictionCSV(e.Plan.Prediction)...), e.Command, e.Precision.String(), lora, trained,
			e.GradAccum.String(), strconv.Itoa(batch)))
	}
	for i, e := range r.Ranked {
		add(i+1, e)
	}
	for _, e := range r.Unranked {
		add(0, e)
	}
	return writeCSV(w, fitCSVColumns, recs)
}

// The fit's JSON document. Sizes in bytes, times in seconds.
type (
	jsonFit struct {
		Version       int            `json:"version"`
		Kind          string         `json:"kind"`
		Header        results.Header `json:"header"`
		Device        string         `json:"device"`
		DeviceFree    int64          `json:"device_free"`
		Budget        int64          `json:"budget"`
		TakeBytes     int64          `json:"take_bytes"`
		MarginPercent float64        `json:"margin_percent"`
		HostAvailable int64          `json:"host_available"`
		HostProfile   string         `json:"host_profile"`
		Searched      int            `json:"searched"`
		Reason        string         `json:"reason"`
		// LongestContext is a generation's longest context that the
		// recommended configuration fits (--context max); absent
		// otherwise.
		LongestContext int `json:"longest_context,omitempty"`
		// LongestSequences are, under --seq-len max, the longest
		// sequence each mode on the device fits, longest first; the
		// entries are ranked at the first's.
		LongestSequences []fitLongest   `json:"longest_sequences,omitempty"`
		Entries          []jsonFitEntry `json:"entries"`
		// Verify is the verification of a fit run with --verify: the
		// configurations run, predicted against measured; absent
		// without.
		Verify *jsonVerify `json:"verify,omitempty"`
	}
	jsonFitEntry struct {
		// Rank counts from 1 among the ranked; 0 for an unranked entry.
		Rank              int                 `json:"rank"`
		Mode              string              `json:"mode"`
		Configuration     string              `json:"configuration"`
		Policy            string              `json:"policy,omitempty"`
		Window            int                 `json:"window,omitempty"`
		OptimizerOnHost   bool                `json:"optimizer_on_host,omitempty"`
		Place             string              `json:"place,omitempty"`
		ManagedAdviseHost bool                `json:"managed_advise_host,omitempty"`
		Recompute         string              `json:"recompute"`
		Precision         string              `json:"precision"`
		DeviceBytes       int64               `json:"device_bytes"`
		HostBytes         int64               `json:"host_bytes"`
		CopiesPerEpoch    jsonCopies          `json:"copies_per_epoch"`
		Prediction        *results.Prediction `json:"prediction,omitempty"`
		Command           string              `json:"command"`
		// LoRARank and TrainedParams are a LoRA configuration's rank and
		// trained parameters (its adapters); absent without LoRA.
		LoRARank      int   `json:"lora_rank,omitempty"`
		TrainedParams int64 `json:"trained_params,omitempty"`
		// GradAccum is the micro-batches of a step under gradient
		// accumulation (K > 1); absent without.
		GradAccum int `json:"grad_accum,omitempty"`
		// Batch is the entry's batch when the fit ranked several
		// (--batch 4,8); absent otherwise (the header's).
		Batch int `json:"batch,omitempty"`
	}
)

// writeFitJSON writes the fit as one JSON document: the version, "kind":
// "fit", the header, the device's memory and the budget, the
// recommendation's reason, and every configuration that fits, ranked ones
// first (the first is the one recommended).
func writeFitJSON(w io.Writer, r fit.Result, v *fit.Verification) error {
	doc := jsonFit{Version: results.Version, Kind: FitKind, Header: r.Header, Device: r.Device,
		DeviceFree: r.DeviceFree, Budget: r.Budget, TakeBytes: r.TakeBytes, MarginPercent: r.MarginPercent,
		HostAvailable: r.HostAvailable, HostProfile: r.HostProfile, Searched: r.Searched, Reason: r.Reason(), LongestContext: r.LongestContext, LongestSequences: longestOf(r.LongestSequences),
		Entries: []jsonFitEntry{}}
	add := func(rank int, e fit.Entry) {
		s := e.Placement().Settings()
		doc.Entries = append(doc.Entries, jsonFitEntry{Rank: rank, Mode: string(e.Mode), Configuration: e.Candidate.String(),
			Policy: string(s.Policy), Window: s.Window, OptimizerOnHost: s.OptimizerOnHost, Place: s.Blocks,
			ManagedAdviseHost: s.AdviseHost, Recompute: e.Recompute.String(), Precision: e.Precision.String(),
			DeviceBytes: e.Plan.Footprint.Device, HostBytes: e.Plan.HostNeed, CopiesPerEpoch: copiesJSON(e.Plan.Copies),
			Prediction: e.Plan.Prediction.Document(), Command: e.Command, LoRARank: e.LoRA.Rank, TrainedParams: e.Trained,
			Batch: e.Batch})
		if e.GradAccum.On() {
			doc.Entries[len(doc.Entries)-1].GradAccum = int(e.GradAccum)
		}
	}
	for i, e := range r.Ranked {
		add(i+1, e)
	}
	for _, e := range r.Unranked {
		add(0, e)
	}
	if v != nil {
		vdoc := toJSONVerify(*v)
		doc.Verify = &vdoc
	}
	return encodeJSON(w, doc)
}

// WriteVerifyAs writes a fit's verification in o's format: as text or
// Markdown, a table of each configuration run with its predicted and
// measured (median) epoch time, their ratio, its peak against the planned
// device need and its status, then the rank correlation; as CSV, one row
// per configuration; as JSON, the document of writeVerifyJSON.
func WriteVerifyAs(w io.Writer, v fit.Verification, o Options) error {
	return writeAs(w, o.Format, tableWriters("Verify", func() table { return verifyTable(v) },
		func(b *strings.Builder) error { return writeVerifyCSV(b, v) },
		func(w io.Writer) error { return writeVerifyJSON(w, v) }))
}

// verifyTable builds the verification's table. A time measured on the
// simulated GPU is a host time and carries †.
func verifyTable(v fit.Verification) table {
	var secsAll []float64
	for _, c := range v.Checks {
		if c.Measured > 0 {
			secsAll = append(secsAll, c.Measured.Seconds())
		}
		if p := c.Predicted(); p > 0 {
			secsAll = append(secsAll, p)
		}
	}
	u := timeUnitFor(secsAll)
	t := table{columns: []column{{"#", false}, {"configuration", true}, {"predicted (" + u.name + ")", false},
		{"measured (" + u.name + ")", false}, {"ratio", false}, {"peak", false}, {"planned", false}, {"status", true}}}
	var ns notes
	sim := false
	for _, c := range v.Checks {
		rank, pred, meas, ratio, peak, planned := "-", na, na, na, na, na
		if c.Rank > 0 {
			rank = strconv.Itoa(c.Rank)
		}
		if p := c.Predicted(); p > 0 {
			pred = u.format(p)
		}
		if c.Measured > 0 {
			meas = u.format(c.Measured.Seconds())
			if c.Simulated && !c.Mode.OnHost() {
				meas += "†"
				sim = true
			}
		}
		if r := c.Ratio(); r == r {
			ratio = sig(r, 3) + "×"
		}
		if !c.Mode.OnHost() {
			peak, planned = units.Bytes(c.Run.PeakDeviceBytes), units.Bytes(c.Plan.Footprint.Device)
		}
		status := "ok"
		switch {
		case c.Run.Status.Kind != bench.StatusOK:
			status = ns.status(c.Mode, c.Run.Status)
		case c.PeakChecked && c.PeakMatches:
			status = "ok, peak = plan"
		case c.PeakChecked:
			status = "peak ≠ plan"
		}
		t.rows = append(t.rows, []string{rank, c.Candidate.String(), pred, meas, ratio, peak, planned, status})
	}
	t.notes = []string{"measured: the median of the timed epochs; ratio: measured over predicted"}
	if sim {
		t.notes = append(t.notes, "† simulated GPU: times are host times, not GPU times; what a run on it checks is the memory: every configuration completes and its peak equals its planned need")
	}
	switch {
	case v.Tau == v.Tau && sim:
		// The predictions are the card's times, the measurements this
		// host's: their order says nothing of the model.
		t.notes = append(t.notes, fmt.Sprintf("rank correlation of the host times measured against the GPU times predicted (Kendall's τ): %s; on sim this compares the host with the card, not the model with a measurement", sig(v.Tau, 2)))
	case v.Tau == v.Tau:
		t.notes = append(t.notes, fmt.Sprintf("rank correlation of measured against predicted (Kendall's τ): %s", sig(v.Tau, 2)))
	default:
		t.notes = append(t.notes, tauMissing(v.TauPoints))
	}
	t.notes = append(t.notes, ns.lines...)
	return t
}

// tauMissing says why a verification with n configurations both
// predicted and measured has no rank correlation.
func tauMissing(n int) string {
	return fmt.Sprintf("rank correlation: not computed: %s both predicted and measured, fewer than the %d it needs"+
		" (a random order of n matches the predicted one once in n!: of 3, once in 6)", plural(int64(n), "configuration"), fit.MinTauPoints)
}

// verifyCSVColumns head the verification's CSV columns.
var verifyCSVColumns = []string{"rank", "mode", "configuration", "device", "simulated", "predicted_s", "measured_s", "ratio",
	"peak_device_bytes", "planned_device_bytes", "status", "reason", "kendall_tau"}

// writeVerifyCSV writes one row per configuration run; kendall_tau, the
// same on every row, is empty when there is none.
func writeVerifyCSV(w io.Writer, v fit.Verification) error {
	var recs [][]string
	for _, c := range v.Checks {
		pred, meas := "", ""
		if p := c.Predicted(); p > 0 {
			pred = secs(p)
		}
		if c.Measured > 0 {
			meas = secs(c.Measured.Seconds())
		}
		recs = append(recs, []string{strconv.Itoa(c.Rank), string(c.Mode), c.Candidate.String(), c.Run.Device,
			strconv.FormatBool(c.Simulated), pred, meas, number(c.Ratio()),
			strconv.FormatInt(c.Run.PeakDeviceBytes, 10), strconv.FormatInt(c.Plan.Footprint.Device, 10),
			string(c.Run.Status.Kind), c.Run.Status.Reason, number(v.Tau)})
	}
	return writeCSV(w, verifyCSVColumns, recs)
}

// The verification's JSON document; times in seconds, sizes in bytes.
type (
	jsonVerify struct {
		Version int               `json:"version"`
		Kind    string            `json:"kind"`
		Checks  []jsonVerifyCheck `json:"checks"`
		// KendallTau is absent with fewer than fit.MinTauPoints
		// configurations both predicted and measured (TauPoints).
		// TauPoints is that number.
		KendallTau *float64 `json:"kendall_tau,omitempty"`
		TauPoints  int      `json:"kendall_tau_points"`
	}
	jsonVerifyCheck struct {
		Rank             int     `json:"rank"`
		Mode             string  `json:"mode"`
		Configuration    string  `json:"configuration"`
		Device           string  `json:"device"`
		Simulated        bool    `json:"simulated"`
		PredictedSeconds float64 `json:"predicted_seconds,omitempty"`
		MeasuredSeconds  float64 `json:"measured_seconds,omitempty"`
		PeakDeviceBytes  int64   `json:"peak_device_bytes"`
		PlannedDevice    int64   `json:"planned_device_bytes"`
		Status           string  `json:"status"`
		// PeakMatchesPlan is present when the peak was checked against
		// the plan (on sim): whether it equals it.
		PeakMatchesPlan *bool `json:"peak_matches_plan,omitempty"`
	}
)

// VerifyKind is the "kind" of a fit's verification's JSON document.
const VerifyKind = "fit-verify"

// writeVerifyJSON writes the verification as one JSON document.
func writeVerifyJSON(w io.Writer, v fit.Verification) error {
	return encodeJSON(w, toJSONVerify(v))
}

// toJSONVerify converts a verification for the JSON documents.
func toJSONVerify(v fit.Verification) jsonVerify {
	doc := jsonVerify{Version: results.Version, Kind: VerifyKind, Checks: []jsonVerifyCheck{}, TauPoints: v.TauPoints}
	if v.Tau == v.Tau {
		doc.KendallTau = &v.Tau
	}
	for _, c := range v.Checks {
		doc.Checks = append(doc.Checks, jsonVerifyCheck{Rank: c.Rank, Mode: string(c.Mode), Configuration: c.Candidate.String(),
			Device: c.Run.Device, Simulated: c.Simulated, PredictedSeconds: c.Predicted(), MeasuredSeconds: c.Measured.Seconds(),
			PeakDeviceBytes: c.Run.PeakDeviceBytes, PlannedDevice: c.Plan.Footprint.Device, Status: c.Run.Status.String()})
		if c.PeakChecked {
			m := c.PeakMatches
			doc.Checks[len(doc.Checks)-1].PeakMatchesPlan = &m
		}
	}
	return doc
}

// fitLongest is one mode's longest sequence in a fit's JSON.
type fitLongest struct {
	Mode   string `json:"mode"`
	Tokens int    `json:"tokens"`
	// Config names the configuration that fits it, and Command runs it
	// at that length.
	Config  string `json:"config"`
	Command string `json:"command"`
}

// longestOf returns ls as the JSON has them, nil for none.
func longestOf(ls []fit.Longest) []fitLongest {
	var out []fitLongest
	for _, l := range ls {
		out = append(out, fitLongest{Mode: string(l.Mode), Tokens: l.Tokens, Config: l.Candidate.String(), Command: l.Command})
	}
	return out
}
