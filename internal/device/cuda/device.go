//go:build gpuzcuda

package cuda

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gorgonia.org/cu"
	cublas "gorgonia.org/cu/blas"

	"gpuz/internal/device"
	_ "gpuz/internal/device/cudainit" // one clear line instead of cu's exit when there is no GPU
	"gpuz/internal/device/gpu"
)

func init() { device.RegisterCUDA(driver{}) }

// driver opens CUDA GPUs for package device.
type driver struct{}

// Count is the number of CUDA GPUs.
func (driver) Count() (int, error) { return cu.NumDevices() }

// Open returns GPU index as a device.
func (driver) Open(index int) (device.Device, error) { return Open(index) }

const (
	// WorkspaceBytes is the device scratch the kernels share: reduction
	// partials, im2col tiles, token lists. It is allocated when the device
	// opens and is not counted in Stats.AllocatedBytes; MemInfo's free
	// memory already excludes it.
	WorkspaceBytes = 64 << 20
	// stagingBytes is the size of each of the two pinned staging buffers
	// through which copies go.
	stagingBytes = 8 << 20
)

// Device is one CUDA GPU. All CUDA calls run on the goroutine of its
// context (cu.Ctx, locked to an OS thread). Kernels and GEMMs run in order
// on the context's default stream (the compute stream); copies go through
// pinned staging on a second, non-blocking stream (the copy stream), with
// events ordering them against the compute stream: an upload waits for the
// kernels already queued (they may read the memory it overwrites) and later
// kernels wait for the upload; a download waits for the kernels queued
// before it.
type Device struct {
	index   int
	name    string
	major   int
	minor   int
	arch    gpu.ArchChoice // what the kernels are compiled for
	compile device.KernelCompile
	dev     cu.Device
	ctx     *cu.Ctx
	copies  cu.Stream
	blas    *cublas.Standard
	gemmEx  gemmExHandle // GemmEx's cuBLAS handle, made on first use
	mod     cu.Module
	fns     map[string]cu.Function
	ws      cu.DevicePtr
	staging [2]pinned
	copied  [2]cu.Event // the last copy through each staging buffer
	marker  cu.Event    // scratch event for ordering the streams

	meter device.Meter
	mu    sync.Mutex // guards err and live
	err   error
	live  map[cu.DevicePtr]int64
}

var _ device.Device = (*Device)(nil)
var _ gpu.Launcher = (*Device)(nil)

// Open creates a context on GPU index, compiles (or loads from the cache)
// the kernels for its architecture and allocates the workspace and the
// staging buffers.
func Open(index int) (d *Device, err error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda:%d: counting GPUs: %w", index, err)
	}
	if index >= n {
		return nil, fmt.Errorf("cuda:%d: no such GPU (%d found)", index, n)
	}
	dev, err := cu.GetDevice(index)
	if err != nil {
		return nil, fmt.Errorf("cuda:%d: %w", index, err)
	}
	d = &Device{index: index, dev: dev, fns: map[string]cu.Function{}, live: map[cu.DevicePtr]int64{}}
	if d.name, err = dev.Name(); err != nil {
		return nil, fmt.Errorf("cuda:%d: device name: %w", index, err)
	}
	if d.major, err = dev.Attribute(cu.ComputeCapabilityMajor); err != nil {
		return nil, fmt.Errorf("cuda:%d: compute capability: %w", index, err)
	}
	if d.minor, err = dev.Attribute(cu.ComputeCapabilityMinor); err != nil {
		return nil, fmt.Errorf("cuda:%d: compute capability: %w", index, err)
	}
	if d.arch, err = gpu.Arch(d.major, d.minor); err != nil {
		return nil, fmt.Errorf("%s: %w", d.Name(), err)
	}
	compiling := time.Now()
	ptx, cached, err := gpu.CachedPTX(d.arch.Arch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Name(), err)
	}
	d.compile = device.KernelCompile{Duration: time.Since(compiling), Cached: cached}
	cuctx, err := dev.MakeContext(cu.SchedAuto)
	if err != nil {
		return nil, fmt.Errorf("%s: creating a context: %w", d.Name(), err)
	}
	d.ctx = cu.CtxFromCUContext(dev, cuctx, cu.SchedAuto)
	started := make(chan error)
	go func() { _ = d.ctx.Run(started) }()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("%s: starting the context: %w", d.Name(), err)
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	err = d.do(func() (err error) {
		if d.copies, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return fmt.Errorf("copy stream: %w", err)
		}
		for i := range d.copied {
			if d.copied[i], err = cu.MakeEvent(cu.DisableTiming); err != nil {
				return fmt.Errorf("event: %w", err)
			}
			if d.staging[i], err = allocPinned(stagingBytes); err != nil {
				return err
			}
		}
		if d.marker, err = cu.MakeEvent(cu.DisableTiming); err != nil {
			return fmt.Errorf("event: %w", err)
		}
		if d.mod, err = cu.LoadData(ptx); err != nil {
			return fmt.Errorf("loading the kernels' PTX (%s from NVRTC %s; needs a driver for CUDA %s or newer): %w",
				d.arch.Arch, d.arch.NVRTC, d.arch.NVRTC, err)
		}
		for name := range gpu.Signatures {
			if d.fns[name], err = d.mod.Function(name); err != nil {
				return fmt.Errorf("kernel %s: %w", name, err)
			}
		}
		if d.ws, err = cu.MemAlloc(WorkspaceBytes); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("cuBLAS: %v", r)
			}
		}()
		d.blas = cublas.New(cublas.WithContext(d.ctx))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Name(), err)
	}
	total, err := d.dev.TotalMem()
	if err != nil {
		return nil, fmt.Errorf("%s: total memory: %w", d.Name(), err)
	}
	d.meter.SetTotal(total)
	return d, nil
}

// Caps says that the device is a CUDA GPU and what it can do: its
// compute capability, its kernels' compile (how long Open took to compile
// them with NVRTC or to read them from the kernel cache, gpu.CachedPTX,
// and which), its description (Describe), managed memory (managed.go) and
// pinned copies (PinnedCopyRates). It is not simulated, has no profile of
// its own and reserves and holds nothing ahead: its real allocations are
// the truth.
func (d *Device) Caps() device.Caps {
	compile := d.compile
	return device.Caps{
		Kind:              device.KindCUDA,
		ComputeCapability: fmt.Sprintf("%d.%d", d.major, d.minor),
		Compile:           &compile,
		Description:       d.Describe(),
		Managed:           d,
		Pinned:            d,
	}
}

// do runs f on the context's thread.
func (d *Device) do(f func() error) error { return d.ctx.Do(f) }

// Close frees the buffers still held, the workspace, the pinned staging
// buffers and GemmEx's cuBLAS handle, and destroys the context (which takes
// its streams, events, module and SGEMM's cuBLAS handle with it). Later Frees do nothing; a second Close
// does nothing. The error joins every step that failed.
func (d *Device) Close() error {
	if d.ctx == nil {
		return nil
	}
	d.mu.Lock()
	live := d.live
	d.live = map[cu.DevicePtr]int64{}
	d.mu.Unlock()
	var errs []error
	_ = d.do(func() error {
		for p, bytes := range live {
			if err := cu.MemFree(p); err != nil {
				errs = append(errs, fmt.Errorf("freeing a buffer: %w", err))
			}
			d.meter.Hold(-bytes)
		}
		if d.ws != 0 {
			if err := cu.MemFree(d.ws); err != nil {
				errs = append(errs, fmt.Errorf("freeing the workspace: %w", err))
			}
			d.ws = 0
		}
		for i, p := range d.staging {
			if p.p != nil {
				if err := p.free(); err != nil {
					errs = append(errs, fmt.Errorf("freeing pinned staging: %w", err))
				}
				d.staging[i] = pinned{}
			}
		}
		if err := d.gemmEx.destroy(); err != nil {
			errs = append(errs, fmt.Errorf("GemmEx's cuBLAS handle: %w", err))
		}
		return nil
	})
	if err := d.ctx.Close(); err != nil {
		errs = append(errs, fmt.Errorf("destroying the context: %w", err))
	}
	d.ctx = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: closing: %w", d.Name(), err)
	}
	return nil
}

// Name is "cuda:N (device name)".
func (d *Device) Name() string { return fmt.Sprintf("cuda:%d (%s)", d.index, d.name) }

// buffer is device memory: n float32 elements at ptr.
type buffer struct {
	ptr  cu.DevicePtr
	n    int
	view bool
}

func (b *buffer) Len() int     { return b.n }
func (b *buffer) Ptr() uintptr { return uintptr(b.ptr) }
func (d *Device) fail(err error) {
	d.mu.Lock()
	if d.err == nil {
		d.err = err
	}
	d.mu.Unlock()
}

// Fail records err as the device's error if it has none yet; the next copy
// reports it.
func (d *Device) Fail(err error) { d.fail(fmt.Errorf("%s: %w", d.Name(), err)) }

func (d *Device) sticky() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// Alloc returns n zeroed elements, or an *OutOfMemoryError when the driver
// answers CUDA_ERROR_OUT_OF_MEMORY.
func (d *Device) Alloc(n int) (device.Buffer, error) { return d.alloc(n, true, cu.MemAlloc) }

// alloc allocates n zeroed elements with allocate (cu.MemAlloc, or managed
// memory), reporting running out of memory as an *OutOfMemoryError, and
// records the buffer as live; held counts its bytes in Stats.
func (d *Device) alloc(n int, held bool, allocate func(bytes int64) (cu.DevicePtr, error)) (device.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("%s: cannot allocate %d elements", d.Name(), n)
	}
	if n == 0 {
		return &buffer{}, nil
	}
	if d.ctx == nil {
		return nil, fmt.Errorf("%s: device is closed", d.Name())
	}
	bytes := 4 * int64(n)
	var p cu.DevicePtr
	err := d.do(func() (err error) {
		if p, err = allocate(bytes); err != nil {
			return err
		}
		return cu.MemsetD32(p, 0, int64(n))
	})
	if errors.Is(err, cu.OutOfMemory) || err == cu.OutOfMemory {
		free, total, _ := d.MemInfo()
		return nil, &device.OutOfMemoryError{Device: d.Name(), Requested: bytes, Free: free, Total: total}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: allocating %d bytes: %w", d.Name(), bytes, err)
	}
	if !held {
		bytes = 0 // Free then releases nothing from the meter
	}
	d.mu.Lock()
	d.live[p] = bytes
	d.mu.Unlock()
	d.meter.Hold(bytes)
	return &buffer{ptr: p, n: n}, nil
}

// Free releases a buffer that Alloc returned; freeing a view or a buffer
// twice panics, as on the simulated device.
func (d *Device) Free(b device.Buffer) {
	if b == nil || b.Len() == 0 {
		return
	}
	cb := b.(*buffer)
	if d.ctx == nil {
		return // Close freed every buffer
	}
	d.mu.Lock()
	bytes, ok := d.live[cb.ptr]
	delete(d.live, cb.ptr)
	d.mu.Unlock()
	if !ok || cb.view {
		panic(fmt.Sprintf("%s: Free of a buffer it does not hold (freed twice, a view, or another device's)", d.Name()))
	}
	if err := d.do(func() error { return cu.MemFree(cb.ptr) }); err != nil {
		d.fail(fmt.Errorf("%s: freeing: %w", d.Name(), err))
	}
	d.meter.Hold(-bytes)
}

// View returns n elements of b from offset.
func (d *Device) View(b device.Buffer, offset, n int) device.Buffer {
	cb := b.(*buffer)
	if offset < 0 || n < 0 || offset+n > cb.n {
		panic(fmt.Sprintf("%s: view [%d, %d) of a buffer of %d", d.Name(), offset, offset+n, cb.n))
	}
	return &buffer{ptr: cb.ptr + cu.DevicePtr(4*offset), n: n, view: true}
}

// Upload copies src into dst through the pinned staging buffers on the copy
// stream. It returns once the last chunk is staged: the copy itself may
// still run, overlapping the kernels that do not need it.
func (d *Device) Upload(dst device.Buffer, src []float32) error {
	if err := device.CheckUpload(d.Name(), dst, src); err != nil {
		return err
	}
	if err := d.sticky(); err != nil {
		return err
	}
	start := time.Now()
	bytes := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(src))), 4*len(src))
	base := dst.(*buffer).ptr
	err := d.do(func() error {
		// The copy may overwrite memory that queued kernels read.
		if err := d.order(cu.Stream{}, d.copies); err != nil {
			return err
		}
		for off, slot := 0, 0; off < len(bytes); off, slot = off+stagingBytes, 1-slot {
			chunk := bytes[off:min(off+stagingBytes, len(bytes))]
			if err := d.copied[slot].Synchronize(); err != nil { // the slot's previous copy is done
				return err
			}
			copy(d.staging[slot].slice(), chunk)
			if err := cu.MemcpyHtoDAsync(base+cu.DevicePtr(off), d.staging[slot].p, int64(len(chunk)), d.copies); err != nil {
				return err
			}
			if err := d.copied[slot].Record(d.copies); err != nil {
				return err
			}
		}
		// Kernels queued from now on see the data.
		return d.order(d.copies, cu.Stream{})
	})
	if err != nil {
		err = fmt.Errorf("%s: upload: %w", d.Name(), err)
		d.fail(err)
		return err
	}
	d.meter.Uploaded(int64(len(bytes)), time.Since(start))
	return nil
}

// order makes later work on stream to wait for the work queued on from.
func (d *Device) order(from, to cu.Stream) error {
	if err := d.marker.Record(from); err != nil {
		return err
	}
	return to.Wait(d.marker, 0)
}

// Download copies src into dst once the kernels queued before it are done.
func (d *Device) Download(dst []float32, src device.Buffer) error {
	if err := device.CheckDownload(d.Name(), dst, src); err != nil {
		return err
	}
	if err := d.sticky(); err != nil {
		return err
	}
	start := time.Now()
	bytes := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 4*len(dst))
	base := src.(*buffer).ptr
	err := d.do(func() error {
		if err := d.order(cu.Stream{}, d.copies); err != nil {
			return err
		}
		for off := 0; off < len(bytes); off += stagingBytes {
			chunk := bytes[off:min(off+stagingBytes, len(bytes))]
			if err := cu.MemcpyDtoHAsync(d.staging[0].p, base+cu.DevicePtr(off), int64(len(chunk)), d.copies); err != nil {
				return err
			}
			if err := d.copied[0].Record(d.copies); err != nil {
				return err
			}
			if err := d.copied[0].Synchronize(); err != nil {
				return err
			}
			copy(chunk, d.staging[0].slice())
		}
		return nil
	})
	if err == nil {
		err = d.sticky()
	}
	if err != nil {
		err = fmt.Errorf("%s: download: %w", d.Name(), err)
		d.fail(err)
		return err
	}
	d.meter.Downloaded(int64(len(bytes)), time.Since(start))
	return nil
}

// Stats reports the memory held by buffers (not the workspace) and copied.
func (d *Device) Stats() device.Stats { return d.meter.Stats() }

// ResetPeak starts a new peak: PeakBytes becomes what is held now.
func (d *Device) ResetPeak() { d.meter.ResetPeak() }

// MemInfo reports the driver's free and total memory of the GPU: what other
// processes hold is not free.
func (d *Device) MemInfo() (free, total int64, err error) {
	err = d.do(func() (err error) {
		free, total, err = cu.MemInfo()
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("%s: memory info: %w", d.Name(), err)
	}
	return free, total, nil
}

// Kernels returns gpuz's kernels on this GPU.
func (d *Device) Kernels() device.Kernels { return gpu.Dispatcher{L: d} }

// Launch runs a kernel on the compute stream.
func (d *Device) Launch(kernel string, grid, block, sharedBytes int, args []gpu.Arg) {
	if err := gpu.CheckArgs(kernel, args); err != nil {
		d.Fail(err)
		return
	}
	vals := make([]uint64, len(args))
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		vals[i] = a.Bits
		params[i] = unsafe.Pointer(&vals[i])
	}
	fn := d.fns[kernel]
	if err := d.do(func() error {
		return fn.Launch(grid, 1, 1, block, 1, 1, sharedBytes, cu.Stream{}, params)
	}); err != nil {
		d.Fail(fmt.Errorf("launching %s (grid %d, block %d): %w", kernel, grid, block, err))
	}
}

// Sgemm runs cuBLAS's column-major SGEMM on the compute stream.
func (d *Device) Sgemm(transA, transB bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int) {
	tA, tB := blas.NoTrans, blas.NoTrans
	rowsA, colsA, rowsB, colsB := m, k, k, n
	if transA {
		tA, rowsA, colsA = blas.Trans, k, m
	}
	if transB {
		tB, rowsB, colsB = blas.Trans, n, k
	}
	as := unsafe.Slice((*float32)(devicePointer(a)), lda*(colsA-1)+rowsA)
	bs := unsafe.Slice((*float32)(devicePointer(b)), ldb*(colsB-1)+rowsB)
	cs := unsafe.Slice((*float32)(devicePointer(c)), ldc*(n-1)+m)
	if err := d.do(func() error {
		d.blas.Sgemm(tA, tB, m, n, k, alpha, as, lda, bs, ldb, beta, cs, ldc)
		return d.blas.Err()
	}); err != nil {
		d.Fail(fmt.Errorf("cublasSgemm(m=%d, n=%d, k=%d): %w", m, n, k, err))
	}
}

// Workspace is the kernels' scratch.
func (d *Device) Workspace() (uintptr, int) { return uintptr(d.ws), WorkspaceBytes }

// Read copies device memory to the host after the queued work
// (a synchronous copy on the compute stream).
func (d *Device) Read(dst unsafe.Pointer, src uintptr, bytes int) error {
	err := d.do(func() error { return cu.MemcpyDtoH(dst, cu.DevicePtr(src), int64(bytes)) })
	if err != nil {
		err = fmt.Errorf("%s: reading %d bytes: %w", d.Name(), bytes, err)
		d.fail(err)
	}
	return err
}

// Write copies host memory to the device, ordered on the compute stream.
func (d *Device) Write(dst uintptr, src unsafe.Pointer, bytes int) error {
	err := d.do(func() error { return cu.MemcpyHtoD(cu.DevicePtr(dst), src, int64(bytes)) })
	if err != nil {
		err = fmt.Errorf("%s: writing %d bytes: %w", d.Name(), bytes, err)
		d.fail(err)
	}
	return err
}

// PinnedCopyRates times copies of bytes (at most the staging size) between
// the pinned staging buffer and device memory on the copy stream, each way,
// best of three: the bus's rate without the pageable memcpy.
func (d *Device) PinnedCopyRates(bytes int) (up, down float64, err error) {
	bytes = min(bytes, stagingBytes)
	var p cu.DevicePtr
	err = d.do(func() (err error) {
		if p, err = cu.MemAlloc(int64(bytes)); err != nil {
			return err
		}
		defer cu.MemFree(p)
		timeCopy := func(copyOnce func() error) (float64, error) {
			fastest := 0.0
			for range 3 {
				start := time.Now()
				if err := copyOnce(); err != nil {
					return 0, err
				}
				if err := d.copies.Synchronize(); err != nil {
					return 0, err
				}
				if s := time.Since(start).Seconds(); fastest == 0 || s < fastest {
					fastest = s
				}
			}
			return float64(bytes) / fastest, nil
		}
		if up, err = timeCopy(func() error { return cu.MemcpyHtoDAsync(p, d.staging[0].p, int64(bytes), d.copies) }); err != nil {
			return err
		}
		down, err = timeCopy(func() error { return cu.MemcpyDtoHAsync(d.staging[0].p, p, int64(bytes), d.copies) })
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("%s: timing pinned copies: %w", d.Name(), err)
	}
	return up, down, nil
}
