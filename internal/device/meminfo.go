package device

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Meminfo is the host's memory as /proc/meminfo reports it, in bytes.
type Meminfo struct {
	Total     int64 // MemTotal
	Available int64 // MemAvailable: what new allocations can use without swapping
}

// ReadMeminfo reads /proc/meminfo.
func ReadMeminfo() (Meminfo, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return Meminfo{}, fmt.Errorf("reading host memory: %w", err)
	}
	defer f.Close()
	var info Meminfo
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		var dst *int64
		switch fields[0] {
		case "MemTotal:":
			dst = &info.Total
		case "MemAvailable:":
			dst = &info.Available
		default:
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return Meminfo{}, fmt.Errorf("reading host memory: %s: %w", fields[0], err)
		}
		*dst = kb * 1024
		found++
	}
	if err := sc.Err(); err != nil {
		return Meminfo{}, fmt.Errorf("reading host memory: %w", err)
	}
	if found < 2 {
		return Meminfo{}, errors.New("reading host memory: /proc/meminfo lacks MemTotal or MemAvailable")
	}
	return info, nil
}
