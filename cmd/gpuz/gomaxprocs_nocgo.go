//go:build !cgo

package main

// loweredGOMAXPROCS reports that nothing lowered GOMAXPROCS: without cgo
// there is no constructor to run before the runtime (gomaxprocs_cgo.go).
func loweredGOMAXPROCS() (string, bool) { return "", false }
