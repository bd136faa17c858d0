//go:build !linux || !(amd64 || arm64)

package hugemem

import "runtime"

// offered is false: gpuz maps huge pages on Linux on amd64 and arm64 only.
func offered() bool { return false }

// status implements Status.
func status() string { return "not available on " + runtime.GOOS + "/" + runtime.GOARCH }

// mapHuge is never called where offered is false.
func mapHuge(uintptr) ([]byte, error) { panic("hugemem: no mappings on " + runtime.GOOS) }

// pageSize is never called where offered is false.
func pageSize() uintptr { panic("hugemem: no mappings on " + runtime.GOOS) }

// unmapTail is never called: no buffer is mapped.
func unmapTail([]byte, int) []byte { panic("hugemem: no mappings on " + runtime.GOOS) }

// unmap is never called: no buffer is mapped.
func unmap([]byte) { panic("hugemem: no mappings on " + runtime.GOOS) }
