// Package reporttest reads back, for tests, what package report writes.
package reporttest

import "strings"

// TableRows maps the first word of each line of the last Analyze table in
// out (the rows and the notes below them) to the line; all of out's lines
// where it holds no "Analyze" heading.
func TableRows(out string) map[string]string {
	if i := strings.LastIndex(out, "Analyze\n"); i >= 0 {
		out = out[i:]
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = line
		}
	}
	return rows
}
