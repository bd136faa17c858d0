package hostmath

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// threads is how many goroutines element-wise kernels use; 0 means
// GOMAXPROCS. It is set by SetThreads, never implicitly.
var threads atomic.Int32

// SetThreads sets how many threads the BLAS and the element-wise kernels
// use, and returns the count in force: n (n ≤ 0 means the default, one per
// available core) capped at what the BLAS accepted, which may be fewer than
// asked (OpenBLAS runs at most its build's MAX_THREADS). The element-wise
// kernels use the same count, so that one number describes the run.
func SetThreads(n int) int {
	want := n
	if n <= 0 {
		want = runtime.GOMAXPROCS(0)
	}
	got := min(want, max(setBLASThreads(want), 1))
	if n <= 0 && got == want {
		threads.Store(0) // follow GOMAXPROCS, as documented for Threads
	} else {
		threads.Store(int32(got))
	}
	return got
}

// Threads reports how many threads the kernels use.
func Threads() int {
	if n := int(threads.Load()); n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// minChunk is the fewest elements worth handing to a goroutine: below it the
// cost of starting one is comparable to the work.
const minChunk = 1 << 15

// parallelFor calls body over [0, n) split into contiguous chunks, one per
// thread, and returns when all are done. Chunk boundaries are multiples of
// align, so that callers working on rows of length align see whole rows.
func parallelFor(n, align int, body func(lo, hi int)) {
	workers := Threads()
	if maxWorkers := n / minChunk; workers > maxWorkers {
		workers = maxWorkers
	}
	if workers <= 1 {
		body(0, n)
		return
	}
	rows := (n + align - 1) / align
	per := (rows + workers - 1) / workers * align
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(lo, hi)
		}()
	}
	wg.Wait()
}

// parallelSum adds up part(lo, hi) over contiguous chunks of [0, n). The
// chunking depends only on n and the thread count, so the result is
// reproducible from run to run on the same settings.
func parallelSum(n int, part func(lo, hi int) float64) float64 {
	workers := Threads()
	if maxWorkers := n / minChunk; workers > maxWorkers {
		workers = maxWorkers
	}
	if workers <= 1 {
		return part(0, n)
	}
	per := (n + workers - 1) / workers
	sums := make([]float64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[w] = part(lo, hi)
		}()
	}
	wg.Wait()
	total := 0.0
	for _, s := range sums {
		total += s
	}
	return total
}
