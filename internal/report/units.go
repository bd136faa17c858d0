package report

import (
	"math"
	"strconv"
	"time"

	"gpuz/internal/units"
)

// Seconds formats d in seconds with three significant digits and the unit,
// as in "4.35 s", "0.617 s", "0.00156 s" or "12.6 s". Integer digits are
// never rounded away: 1234.6 s is "1235 s".
func Seconds(d time.Duration) string {
	return units.Sig3(d.Seconds()) + " s"
}

// count formats n with three significant digits and a decimal suffix (k, M,
// B for billion, T), as in "950", "12.3k" or "480M".
func count(n int64) string {
	v := float64(n)
	if math.Abs(v) < 999.5 {
		return strconv.FormatInt(n, 10)
	}
	suffixes := []string{"", "k", "M", "B", "T"}
	i := 0
	for math.Abs(v) >= 999.5 && i < len(suffixes)-1 {
		v /= 1000
		i++
	}
	return units.Sig3(v) + suffixes[i]
}
