// Package report turns the results of a gpuz run into what people and
// programs read: summary statistics of epoch times, human-readable units,
// the per-epoch progress lines, the Analyze table that compares the modes,
// and a JSON export.
//
// Everything is written to an io.Writer that the caller supplies; nothing in
// this package prints on its own. Statistics are plain: every timed epoch
// counts, and no outliers are removed.
package report
