package report

import "gpuz/internal/bench"

// OnHost reports whether mode, as a results document names it, runs on
// the host rather than the GPU (bench.Mode.OnHost: the modes table's):
// for readers of the document, such as plot, that do not import bench.
func OnHost(mode string) bool { return bench.Mode(mode).OnHost() }
