//go:build !linux || !(amd64 || arm64)

package hugemem

import "runtime"

// offered is false: gpuz maps huge pages on Linux on amd64 and arm64 only.
func offered() bool { return false }

// status implements Status.
func status() string { return "not available on " + runtime.GOOS + "/" + runtime.GOARCH }

// mapFloats is never called where offered is false.
func mapFloats(int) (*Floats, error) { panic("hugemem: no mappings on " + runtime.GOOS) }

// unmap is never called: no buffer is mapped.
func unmap([]byte) { panic("hugemem: no mappings on " + runtime.GOOS) }
