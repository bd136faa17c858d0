package engine

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

// Copies counts the copies between host and device over one epoch.
type Copies struct {
	UploadBytes   int64 // host → device
	DownloadBytes int64 // device → host
	// OverlapBytes is the part of UploadBytes that the auto policy's
	// prefetch loads ahead of need: on a device with a copy stream it may
	// overlap compute. The step waits for every other copy (a download
	// always waits: the host needs the data).
	OverlapBytes int64
	Count        int64 // copies made, each an Upload or a Download
	// RemoteBytes is what kernels read and write of a managed placement's
	// pages preferred on the host, in place across the bus: neither
	// copied nor migrated, and not in the counts above.
	RemoteBytes int64
}

// SyncBytes is the bytes the steps wait for: all but OverlapBytes.
func (c Copies) SyncBytes() int64 { return c.UploadBytes + c.DownloadBytes - c.OverlapBytes }

// plus returns the sum of c and d, d counted n times.
func (c Copies) plus(d Copies, n int64) Copies {
	return Copies{UploadBytes: c.UploadBytes + n*d.UploadBytes, DownloadBytes: c.DownloadBytes + n*d.DownloadBytes,
		OverlapBytes: c.OverlapBytes + n*d.OverlapBytes, Count: c.Count + n*d.Count, RemoteBytes: c.RemoteBytes + n*d.RemoteBytes}
}

// Copies returns the copies one epoch of batches makes under placement
// pl (a batch one Run, or when accumulating gradients its micro-batches'
// Runs, Spec.Accumulate of them), without allocating anything: before every Run the fed
// inputs are uploaded (nil fed: every input of the Spec; constants set once
// are not fed), after it the output scalar is downloaded (under
// Spec.Passes, a Run is each pass once, and each pass's output is
// downloaded), and under a paged
// placement the blocks move as its cache policy decides, in a window of
// window blocks (what Footprint or Program.Window gives; raised to
// MinWindow and capped at the blocks, as Load does). The cache is the one
// that drives a Program, walked over the same steps, with a mover that
// counts instead of copying. The epoch counted is one in steady state, the
// second after Load: the first starts from an empty window and so differs
// by what the window holds at an epoch's start. Parameters set once after
// Load are not counted. Under a managed placement the pages migrate as
// cache.Pages decides on a device holding window pages (Footprint.Window,
// Program.Window), walked over the same touches as a Program makes them.
func (sc *Schedule) Copies(pl Placement, window, batches int, fed []*gorgonia.Node) (Copies, error) {
	bd, err := sc.bindValid(pl)
	if err != nil {
		return Copies{}, err
	}
	if batches < 0 {
		return Copies{}, fmt.Errorf("engine: negative batches %d", batches)
	}
	sd := bd.sides()
	if fed == nil {
		fed = sc.spec.Inputs
	}
	perBatch, err := sc.runCopies(sd, sc.outputs(), fed)
	if err != nil {
		return Copies{}, err
	}
	perBatch = perBatch.plus(sc.crossings(sd), 1)
	runs := batches * sc.microBatches() // a batch's micro-batches, each a Run
	total := Copies{}.plus(perBatch, int64(runs))
	moved, err := bd.moves(window, func(h runHooks, st stepper) error {
		for range runs {
			if err := sc.walk(h, st); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Copies{}, err
	}
	return total.plus(moved, 1), nil
}

// runCopies counts the copies around a Run (or a pass) under sides sd:
// each output read back on the host from the device, and each fed input
// set on the device.
func (sc *Schedule) runCopies(sd sides, outputs []int, fed []*gorgonia.Node) (Copies, error) {
	var c Copies
	for _, out := range outputs {
		if !sd.valueHost[out] { // the output is read on the host
			c.DownloadBytes += 4 * int64(sc.values[out].elems)
			c.Count++
		}
	}
	for _, n := range fed {
		i, ok := sc.index[n]
		if !ok || sc.values[i].kind != kindInput {
			return Copies{}, fmt.Errorf("engine: %s is not an input of the schedule", n.Name())
		}
		if !sd.valueHost[i] {
			c.UploadBytes += 4 * int64(sc.values[i].elems)
			c.Count++
		}
	}
	return c, nil
}

// copyCounter is the dry run's mover and stepper: it counts the copies a
// Program would make and runs nothing.
type copyCounter struct {
	*pager
	n Copies
}

// upload counts an upload of elems elements; ahead marks one the cache
// makes ahead of need.
func (k *copyCounter) upload(elems int, ahead bool) {
	k.n.UploadBytes += 4 * int64(elems)
	if ahead {
		k.n.OverlapBytes += 4 * int64(elems)
	}
	k.n.Count++
}

func (k *copyCounter) download(elems int) {
	k.n.DownloadBytes += 4 * int64(elems)
	k.n.Count++
}

// Load counts block b's upload.
func (k *copyCounter) Load(b, _ int, ahead bool) error {
	return k.moves(b, true, true, func(_, n int, _ member) error { k.upload(n, ahead); return nil })
}

// Evict counts block b's write-back.
func (k *copyCounter) Evict(b int, writeParams bool) error {
	return k.moves(b, writeParams, false, func(_, n int, _ member) error { k.download(n); return nil })
}

// execute counts a staged output's download to its block's master.
func (k *copyCounter) execute(si int, staged bool) error {
	if staged {
		k.download(k.sched.values[k.sched.steps[si].out].elems)
	}
	return nil
}

// update runs on the device: no copy.
func (k *copyCounter) update(int) error { return nil }

// hostUpdate counts the download of each of block b's gradients.
func (k *copyCounter) hostUpdate(b int) error {
	for _, i := range k.layouts[b].params {
		if g := k.sched.grads[i]; g >= 0 {
			k.download(k.sched.values[g].elems)
		}
	}
	return nil
}

// outputs returns the values a Run hands back: the output scalar, or each
// pass's output under Spec.Passes.
func (sc *Schedule) outputs() []int {
	if len(sc.spec.Passes) == 0 {
		return []int{sc.output}
	}
	out := make([]int, len(sc.spec.Passes))
	for p, n := range sc.spec.Passes {
		out[p] = sc.index[n]
	}
	return out
}
