//go:build linux && (amd64 || arm64)

package hugemem

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// enabledFile holds the kernel's transparent huge page setting, as
// "always [madvise] never" with the one in force in brackets.
const enabledFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// setting is the transparent huge page setting in force, read once: "always",
// "madvise", "never", or "" when the kernel has no such file.
var setting = sync.OnceValue(func() string { return readSetting(enabledFile) })

// readSetting returns the bracketed word of a file in enabledFile's format,
// or "".
func readSetting(file string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for _, w := range strings.Fields(string(data)) {
		if len(w) > 2 && w[0] == '[' && w[len(w)-1] == ']' {
			return w[1 : len(w)-1]
		}
	}
	return ""
}

// offered reports whether the kernel gives huge pages to a mapping that
// asks for them.
func offered() bool { s := setting(); return s == "always" || s == "madvise" }

// status implements Status from the setting.
func status() string { return statusOf(setting()) }

// statusOf is Status for a given setting.
func statusOf(s string) string {
	switch s {
	case "always", "madvise":
		return s + ": used"
	case "":
		return "not available (no " + enabledFile + ")"
	default:
		return s + ": not available"
	}
}

// mapHuge maps size bytes (a multiple of the small page) at a huge-page
// boundary, asks for huge pages there and faults them in. The length is
// rounded up to a small page only, so that the tail short of a huge page
// stays in small pages rather than taking a huge page of which it uses a
// part. (x/sys's Mmap and Munmap track whole mappings and refuse to unmap
// a part, hence the system calls.)
func mapHuge(size uintptr) ([]byte, error) {
	addr, _, errno := unix.Syscall6(unix.SYS_MMAP, 0, size+hugePage, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
	if errno != 0 {
		return nil, fmt.Errorf("mmap: %w", errno)
	}
	// Keep the huge-page-aligned part, handing back the head before it
	// and the tail after it.
	start := (addr + hugePage - 1) &^ (hugePage - 1)
	if start > addr {
		unmapRange(addr, start-addr)
	}
	if end := addr + size + hugePage; end > start+size {
		unmapRange(start+size, end-start-size)
	}
	mem := unsafe.Slice((*byte)(pointer(start)), size)
	if err := unix.Madvise(mem, unix.MADV_HUGEPAGE); err != nil {
		unmap(mem)
		return nil, fmt.Errorf("madvise: %w", err)
	}
	// Fault the pages in now, at allocation, rather than one by one in
	// the run's first epoch, on every core: the kernel (and a hypervisor
	// backing the memory for the first time) faults pages in on several
	// threads nearly as many times faster. A kernel older than 5.14
	// refuses MADV_POPULATE_WRITE (EINVAL); its pages are faulted in on
	// first touch, still as huge pages.
	err := inParallel(mem, func(part []byte) error {
		if err := unix.Madvise(part, unix.MADV_POPULATE_WRITE); err != unix.EINVAL {
			return err
		}
		return nil
	})
	if err != nil {
		unmap(mem)
		return nil, fmt.Errorf("madvise populate: %w", err)
	}
	return mem, nil
}

// pageSize is the small page, to which mappings' lengths are rounded.
func pageSize() uintptr { return uintptr(os.Getpagesize()) }

// pointer is the address of memory the kernel mapped, outside the Go heap,
// as a pointer.
func pointer(addr uintptr) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(nil), addr) }

// unmap hands a mapping back to the system.
func unmap(mem []byte) { unmapRange(uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem))) }

// unmapTail hands back the bytes of a mapping from keep (a multiple of the
// small page) on, and returns the part kept.
func unmapTail(mem []byte, keep int) []byte {
	unmapRange(uintptr(unsafe.Pointer(&mem[keep])), uintptr(len(mem)-keep))
	return mem[:keep:keep]
}

// unmapRange hands length bytes from addr back to the system. It cannot
// fail for a range that mmap returned, but for a programming error.
func unmapRange(addr, length uintptr) {
	if _, _, errno := unix.Syscall(unix.SYS_MUNMAP, addr, length, 0); errno != 0 {
		panic(fmt.Sprintf("hugemem: munmap: %v", errno))
	}
}
