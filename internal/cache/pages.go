package cache

import (
	"container/list"
	"fmt"
)

// DefaultPageSize is the managed mode's default page: the 2 MiB block that
// NVIDIA's driver migrates as a whole once more than half of it is
// resident (nvidia-uvm's uvm_perf_prefetch.c migrates the faulting 64 KiB
// and prefetches the rest of its 2 MiB block past 51%), so a sequential
// sweep over a weight moves whole 2 MiB blocks.
const DefaultPageSize = 2 << 20

// MinPageSize is the smallest page the managed mode takes: the host's
// page.
const MinPageSize = 4 << 10

// PageMover carries out a page residency's decisions: it migrates one page
// of managed memory to the device or back to the host.
type PageMover interface {
	MigrateIn(page int) error
	MigrateOut(page int) error
}

// Pages is the managed mode's page residency, the driver's paging as gpuz
// models it: a kernel touching a page that is not on the device migrates
// it in, and when the device holds Capacity pages already, the least
// recently touched page migrates out first. It decides over page indices;
// the mover migrates (the simulated device copies and counts; a dry run
// only counts; on CUDA the driver migrates by itself and the walk
// predicts).
type Pages struct {
	capacity int
	mover    PageMover
	lru      *list.List            // resident pages, most recently touched at the front
	resident map[int]*list.Element // page → its element in lru
}

// NewPages returns an empty residency of capacity pages (at least 1).
func NewPages(capacity int, m PageMover) (*Pages, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("cache: a device that holds %d pages cannot run a kernel", capacity)
	}
	return &Pages{capacity: capacity, mover: m, lru: list.New(), resident: map[int]*list.Element{}}, nil
}

// Capacity returns the most pages resident at once.
func (p *Pages) Capacity() int { return p.capacity }

// Resident returns the number of pages on the device.
func (p *Pages) Resident() int { return p.lru.Len() }

// Touch records a kernel's touch of pages first to last (inclusive), in
// order: each becomes the most recently used, migrating in (after the
// least recently used page migrates out when the device is full) if it is
// not on the device.
func (p *Pages) Touch(first, last int) error {
	for page := first; page <= last; page++ {
		if e, ok := p.resident[page]; ok {
			p.lru.MoveToFront(e)
			continue
		}
		if p.lru.Len() >= p.capacity {
			old := p.lru.Back()
			victim := old.Value.(int)
			if err := p.mover.MigrateOut(victim); err != nil {
				return err
			}
			p.lru.Remove(old)
			delete(p.resident, victim)
		}
		if err := p.mover.MigrateIn(page); err != nil {
			return err
		}
		p.resident[page] = p.lru.PushFront(page)
	}
	return nil
}

// CheckPageSize reports a page size the managed mode cannot use: one that
// is not a power of two of at least MinPageSize.
func CheckPageSize(bytes int64) error {
	if bytes < MinPageSize || bytes&(bytes-1) != 0 {
		return fmt.Errorf("a page of %d bytes: want a power of two of at least 4KiB", bytes)
	}
	return nil
}
