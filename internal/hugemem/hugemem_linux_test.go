//go:build linux && (amd64 || arm64)

package hugemem

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// checkMapped fails unless f's mapping starts at a huge page and every
// page of it is resident before the buffer is first touched.
func checkMapped(t *testing.T, f *Floats) {
	t.Helper()
	if addr := uintptr(unsafe.Pointer(&f.mem[0])); addr%hugePage != 0 {
		t.Fatalf("mapping at %#x, not at a huge page", addr)
	}
	resident, err := mincore(f.mem)
	if err != nil {
		t.Fatalf("mincore of a live buffer: %v", err)
	}
	for i, r := range resident {
		if r&1 == 0 {
			t.Fatalf("page %d of %d is not resident after Alloc", i, len(resident))
		}
	}
}

// checkUnmapped fails unless mem, a freed buffer's mapping, is gone.
func checkUnmapped(t *testing.T, mem []byte) {
	t.Helper()
	if _, err := mincore(mem); !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("mincore of a freed buffer: %v, want ENOMEM (unmapped)", err)
	}
}

// mincore asks the kernel which pages of mem are resident (bit 0 of each
// byte): ENOMEM when a part of it is not mapped.
func mincore(mem []byte) ([]byte, error) {
	vec := make([]byte, (len(mem)+os.Getpagesize()-1)/os.Getpagesize())
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return nil, errno
	}
	return vec, nil
}

func TestStatus(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, want string
	}{
		{"madvise", "always [madvise] never\n", "madvise: used"},
		{"always", "[always] madvise never\n", "always: used"},
		{"never", "always madvise [never]\n", "never: not available"},
		{"no file", "", "not available (no " + enabledFile + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name)
			if tc.file != "" {
				if err := os.WriteFile(file, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := statusOf(readSetting(file)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
