// Package units formats and parses the quantities gpuz prints and reads:
// byte sizes in binary or decimal units, durations in seconds, counts with
// decimal suffixes and numbers to three significant digits. It imports
// nothing of gpuz, so every layer can use it.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// binaryUnits are the units Bytes chooses from, each 1024 times the last.
var binaryUnits = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// Bytes formats n bytes in binary units with three significant digits, as in
// "512 B", "1.50 KiB", "240 MiB" or "7.26 GiB". Counts under 1 KiB are exact.
func Bytes(n int64) string {
	u, sign := uint64(n), ""
	if n < 0 {
		u, sign = -u, "-"
	}
	if u < 1024 {
		return fmt.Sprintf("%s%d B", sign, u)
	}
	v, i := float64(u), 0
	// 1023.5 and above would print as "1024", so move up a unit instead.
	for v >= 1023.5 && i < len(binaryUnits)-1 {
		v /= 1024
		i++
	}
	return sign + Sig3(v) + " " + binaryUnits[i]
}

// exactUnits are the units ExactBytes tries, in order of preference.
var exactUnits = []struct {
	name string
	size int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6},
	{"KiB", 1 << 10}, {"KB", 1e3},
}

// ExactBytes spells n bytes exactly, without a space, in the largest unit
// that divides it (binary units first), as in "8GiB", "512MiB", "4GB" or
// "1000B": a name that ParseBytes reads back to n.
func ExactBytes(n int64) string {
	if n > 0 {
		for _, u := range exactUnits {
			if n%u.size == 0 {
				return strconv.FormatInt(n/u.size, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// Sig3 formats v with three significant digits, without an exponent, and
// with every integer digit when there are more than three: "4.35", "0.617",
// "12.6", "1235".
func Sig3(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 0:
		return "-" + Sig3(-v)
	case math.IsInf(v, 0) || math.IsNaN(v):
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	// The exponent of v once rounded to three digits: 9.996 becomes 1.00e+01.
	e := strconv.FormatFloat(v, 'e', 2, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	return strconv.FormatFloat(v, 'f', max(2-exp, 0), 64)
}

// Seconds formats d in seconds with three significant digits and the unit,
// as in "4.35 s", "0.617 s", "0.00156 s" or "12.6 s". Integer digits are
// never rounded away: 1234.6 s is "1235 s".
func Seconds(d time.Duration) string {
	return Sig3(d.Seconds()) + " s"
}

// countSuffixes are the decimal suffixes Count chooses from, each 1000
// times the last: thousand, million, billion, trillion.
var countSuffixes = []string{"", "k", "M", "B", "T"}

// Count formats n with three significant digits and a decimal suffix (k, M,
// B for billion, T), as in "950", "12.3k" or "480M". Counts under 1000 are
// exact.
func Count(n int64) string {
	v := float64(n)
	if math.Abs(v) < 999.5 {
		return strconv.FormatInt(n, 10)
	}
	i := 0
	for math.Abs(v) >= 999.5 && i < len(countSuffixes)-1 {
		v /= 1000
		i++
	}
	return Sig3(v) + countSuffixes[i]
}

// byteUnits maps the lower-cased units that ParseBytes accepts to their size.
var byteUnits = map[string]int64{
	"":    1,
	"b":   1,
	"kb":  1e3,
	"mb":  1e6,
	"gb":  1e9,
	"tb":  1e12,
	"kib": 1 << 10,
	"mib": 1 << 20,
	"gib": 1 << 30,
	"tib": 1 << 40,
}

// ParseBytes parses a size in bytes: a non-negative decimal number, possibly
// with a fraction, then optionally a unit, as in "512", "512MiB", "1.5 GiB" or
// "4GB". Units are B, the decimal KB, MB, GB and TB (powers of 1000) and the
// binary KiB, MiB, GiB and TiB (powers of 1024), in any letter case. A
// size in bytes is a whole number of them (1.5B and 0.1B are errors); a
// fraction of a larger unit is rounded to the nearest byte, and one under
// a byte (0.0001KB) is an error. The error names the text.
func ParseBytes(s string) (int64, error) {
	bad := func(why string) (int64, error) {
		return 0, fmt.Errorf("invalid byte size %q: %s", s, why)
	}
	text := strings.TrimSpace(s)
	i := strings.IndexFunc(text, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(text)
	}
	num, unit := text[:i], strings.TrimSpace(text[i:])
	switch {
	case text == "":
		return bad("empty")
	case strings.HasPrefix(text, "-"):
		return bad("negative")
	case num == "":
		return bad("no number")
	}
	mult, ok := byteUnits[strings.ToLower(unit)]
	if !ok {
		return bad(fmt.Sprintf("unknown unit %q (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", unit))
	}

	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/mult {
			return bad("too large")
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return bad(fmt.Sprintf("bad number %q", num))
	}
	v := math.Round(f * float64(mult))
	if v >= math.MaxInt64 { // float64(MaxInt64) is 2⁶³
		return bad("too large")
	}
	// A size in bytes is a whole number of them (1.5B and 0.1B are
	// refused, not rounded to 2 and 0); in a larger unit the fraction is
	// rounded to the nearest byte (1.1KiB is 1126 B), unless it is less
	// than one (0.0001KB).
	switch {
	case mult == 1 && f != math.Trunc(f):
		return bad("not a whole number of bytes")
	case v == 0 && f != 0:
		return bad("less than one byte")
	}
	return int64(v), nil
}
