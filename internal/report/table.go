package report

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"gpuz/internal/stats"
	"gpuz/internal/termsafe"
)

// maxWidth is the most columns a line of a default (not --wide) table and
// of the notes below it takes, so that it fits a terminal or a code block
// without wrapping.
const maxWidth = 100

// column is a column of a table: its heading and whether its cells are
// aligned left (text) rather than right (numbers).
type column struct {
	name string
	left bool
}

// table is a table as the text and Markdown formats render it: columns,
// rows of cells (one per column) and notes, lines that go below it (units,
// footnotes).
type table struct {
	columns []column
	rows    [][]string
	notes   []string
}

// safe returns t with its headings, cells and notes passed through
// termsafe.String: a cell may hold a name from a file (a profile's title, a
// benchmark's name in compare, a device's name), whose control characters
// must not reach the terminal raw.
func (t table) safe() table {
	s := table{columns: make([]column, len(t.columns)), rows: make([][]string, len(t.rows)), notes: termsafe.Strings(t.notes)}
	for i, c := range t.columns {
		s.columns[i] = column{name: termsafe.String(c.name), left: c.left}
	}
	for i, row := range t.rows {
		s.rows[i] = termsafe.Strings(row)
	}
	return s
}

// width is the width of s in columns: one per rune, as for every character
// the tables print ("×", "±", "†", "→" and "µ" included).
func width(s string) int { return utf8.RuneCountInString(s) }

// writeText renders t as plain text: the headings, a rule of dashes under
// each, then the rows, columns two spaces apart and padded to their widest
// cell; trailing spaces are trimmed. The notes follow, each wrapped at
// maxWidth. Control characters in any of them are escaped (safe).
func (t table) writeText(b *strings.Builder) {
	t = t.safe()
	widths := make([]int, len(t.columns))
	for i, c := range t.columns {
		widths[i] = width(c.name)
	}
	for _, row := range t.rows {
		for i, cell := range row {
			widths[i] = max(widths[i], width(cell))
		}
	}
	line := func(cells []string) {
		var l strings.Builder
		for i, cell := range cells {
			if i > 0 {
				l.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-width(cell))
			if t.columns[i].left {
				l.WriteString(cell + pad)
			} else {
				l.WriteString(pad + cell)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	names, rules := make([]string, len(t.columns)), make([]string, len(t.columns))
	for i, c := range t.columns {
		names[i], rules[i] = c.name, strings.Repeat("-", widths[i])
	}
	line(names)
	line(rules)
	for _, row := range t.rows {
		line(row)
	}
	for _, n := range t.notes {
		for _, l := range wrap(n, maxWidth) {
			b.WriteString(l + "\n")
		}
	}
}

// writeMarkdown renders t as a GitHub table (headings, the separator row
// with each column's alignment, the rows; pipes in cells escaped), then the
// notes as a list. Control characters in any of them are escaped (safe).
func (t table) writeMarkdown(b *strings.Builder) {
	t = t.safe()
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteByte('\n')
	}
	names, seps := make([]string, len(t.columns)), make([]string, len(t.columns))
	for i, c := range t.columns {
		names[i], seps[i] = c.name, "---:"
		if c.left {
			seps[i] = "---"
		}
	}
	line(names)
	b.WriteString("|" + strings.Join(seps, "|") + "|\n")
	for _, row := range t.rows {
		line(row)
	}
	if len(t.notes) > 0 {
		b.WriteByte('\n')
		for _, n := range t.notes {
			b.WriteString("- " + strings.ReplaceAll(n, "|", `\|`) + "\n")
		}
	}
}

// wrap breaks s into lines of at most limit columns at spaces, the lines
// after the first indented by four spaces. A word longer than a line is
// left whole, and a number is never parted from its unit ("192 MiB",
// "3.5 s": valueWords).
func wrap(s string, limit int) []string {
	var lines []string
	cur := ""
	for _, word := range valueWords(strings.Fields(s)) {
		switch {
		case cur == "":
			cur = word
		case width(cur)+1+width(word) <= limit:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = "    " + word
		}
	}
	return append(lines, cur)
}

// valueWords joins each unit word (a byte or time unit, as package units
// writes them) to the number before it, with its space, so that wrap
// keeps the value whole.
func valueWords(words []string) []string {
	var out []string
	for _, w := range words {
		if n := len(out); n > 0 && isUnit(w) && endsInDigit(out[n-1]) {
			out[n-1] += " " + w
			continue
		}
		out = append(out, w)
	}
	return out
}

// isUnit reports whether word, less trailing punctuation, is a unit of
// bytes, of a rate of bytes or of time.
func isUnit(word string) bool {
	switch strings.TrimRight(word, ",;:.)]") {
	case "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "kB", "KB", "MB", "GB", "TB",
		"B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s", "s", "ms", "µs", "ns":
		return true
	}
	return false
}

// endsInDigit reports whether word's last character is a decimal digit.
func endsInDigit(word string) bool {
	return word != "" && word[len(word)-1] >= '0' && word[len(word)-1] <= '9'
}

// sig formats v with n significant digits, without an exponent, keeping
// every integer digit: sig(0.04213, 2) is "0.042", sig(1234, 2) "1234".
func sig(v float64, n int) string {
	switch {
	case v == 0:
		return "0"
	case v < 0:
		return "-" + sig(-v, n)
	case math.IsInf(v, 0) || math.IsNaN(v):
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	// The exponent of v once rounded to n digits: 9.996 becomes 1.00e+01.
	e := strconv.FormatFloat(v, 'e', n-1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	return strconv.FormatFloat(v, 'f', max(n-1-exp, 0), 64)
}

// timeUnit is a unit a column of times is shown in.
type timeUnit struct {
	name    string
	seconds float64
}

// timeUnitFor chooses the unit of a column of times in seconds from their
// median: seconds from 1 s up, milliseconds from 1 ms, else microseconds.
// Every cell of the column is then in that unit, which the heading names.
func timeUnitFor(seconds []float64) timeUnit {
	if len(seconds) == 0 {
		return timeUnit{"s", 1}
	}
	m := stats.MedianCI(seconds).Center
	switch {
	case m >= 1:
		return timeUnit{"s", 1}
	case m >= 1e-3:
		return timeUnit{"ms", 1e-3}
	}
	return timeUnit{"µs", 1e-6}
}

// format formats seconds in u with three significant digits.
func (u timeUnit) format(seconds float64) string { return sig(seconds/u.seconds, 3) }
