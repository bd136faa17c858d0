package device

import (
	"fmt"
	"sync"
	"time"
)

// copyCounter performs and accounts the copies of a device whose memory is
// host memory (the host and the simulated GPU): bytes each way and the time
// the copies took.
type copyCounter struct {
	mu    *sync.Mutex
	stats *Stats
	name  string
}

// upload copies src into the host buffer dst.
func (c copyCounter) upload(dst Buffer, src []float32) error {
	d := Floats(dst)
	if len(d) != len(src) {
		return fmt.Errorf("%s: upload of %d elements into a buffer of %d", c.name, len(src), len(d))
	}
	start := time.Now()
	copy(d, src)
	c.count(&c.stats.UploadBytes, len(src), time.Since(start))
	return nil
}

// download copies the host buffer src into dst.
func (c copyCounter) download(dst []float32, src Buffer) error {
	s := Floats(src)
	if len(s) != len(dst) {
		return fmt.Errorf("%s: download of a buffer of %d elements into %d", c.name, len(s), len(dst))
	}
	start := time.Now()
	copy(dst, s)
	c.count(&c.stats.DownloadBytes, len(dst), time.Since(start))
	return nil
}

func (c copyCounter) count(total *int64, elems int, took time.Duration) {
	c.mu.Lock()
	*total += 4 * int64(elems)
	c.stats.CopyTime += took
	c.mu.Unlock()
}
