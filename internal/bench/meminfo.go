package bench

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// hostAvailableBytes returns the host memory available to a new allocation,
// MemAvailable of /proc/meminfo, and false where that is unknown.
func hostAvailableBytes() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}
