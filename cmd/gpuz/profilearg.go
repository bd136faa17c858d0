package main

import (
	"path/filepath"

	"gpuz/internal/perfmodel"
)

// profileArg returns path as --host-profile and --device sim: read it back
// as a file: a name without a slash that does not end in .json (prof) is
// taken there for a built-in profile, so it is given as ./prof.
func profileArg(path string) string {
	if perfmodel.IsFile(path) {
		return path
	}
	return "." + string(filepath.Separator) + path
}
