package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/perfmodel"
)

// predictedCell formats a prediction's model time in u with its roofline
// bound: "1.21 (≥0.64)".
func predictedCell(u timeUnit, p *bench.Prediction) string {
	return u.format(p.Model.Seconds()) + " (≥" + sig(p.Bound.Seconds()/u.seconds, 2) + ")"
}

// predictionNote says what the predicted column holds and on which
// profiles, naming the modes predicted on each: "predicted: model time
// per epoch on rtx4060-laptop (cuda, cache), not measured, with the
// roofline bound (≥); docs/model.md". "" when nothing was predicted.
func predictionNote(modes []string, preds []*bench.Prediction) string {
	profiles := make([]string, len(preds))
	for i, p := range preds {
		if p != nil {
			profiles[i] = p.Profile
		}
	}
	on := groupModes(profiles, modes)
	if on == "" {
		return ""
	}
	return "predicted: model time per epoch on " + on +
		", not measured, with the roofline bound (≥) that no such device beats; docs/model.md"
}

// groupModes names each of keys once, in order, with the modes given for
// it: "rtx4060-laptop (cuda, cache) and cpu-i7-13700h (cpu)" for keys[i]
// the key of modes[i]; an empty key is left out.
func groupModes(keys, modes []string) string {
	var order []string
	byKey := map[string][]string{}
	for i, k := range keys {
		if k == "" {
			continue
		}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		if !containsString(byKey[k], modes[i]) {
			byKey[k] = append(byKey[k], modes[i])
		}
	}
	for i, k := range order {
		order[i] = k + " (" + strings.Join(byKey[k], ", ") + ")"
	}
	return strings.Join(order, " and ")
}

// flagNote says why a measured time is flagged against its model time
// (perfmodel.Flag), "" when it is not: "measured 8.1× its model time on
// PROFILE; likely: …; …".
func flagNote(measured float64, p *bench.Prediction) string {
	ratio, reasons := perfmodel.Flag(time.Duration(math.Round(measured*1e9)), p.Model)
	if len(reasons) == 0 {
		return ""
	}
	return fmt.Sprintf("measured %.1f× its model time on %s; likely: %s", ratio, p.Profile, strings.Join(reasons, "; "))
}

// efficiency is a prediction's bound over a measured time in seconds, NaN
// when either is missing.
func efficiency(measured float64, p *bench.Prediction) float64 {
	if p == nil || !(measured > 0) || p.Bound <= 0 {
		return math.NaN()
	}
	return p.Bound.Seconds() / measured
}

// predictionCSVColumns head the prediction's CSV columns, after a table's
// own.
var predictionCSVColumns = []string{"predicted_profile", "predicted_s", "bound_s", "limiter"}

// predictionCSV returns a prediction's CSV cells, empty without one.
func predictionCSV(p *bench.Prediction) []string {
	if p == nil {
		return []string{"", "", "", ""}
	}
	return []string{p.Profile, secs(p.Model.Seconds()), secs(p.Bound.Seconds()), p.Limiter}
}
