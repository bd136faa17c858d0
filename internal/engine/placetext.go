package engine

import (
	"fmt"

	"gpuz/internal/units"
)

// ManagedText describes a managed placement in a table: the pages the
// device holds resident of the region's, and the page size, as
// "40/76 pages of 2 MiB", and AdviseHostText after it when the rest stays
// in host memory. PlaceText is the hybrid placement's counterpart.
func ManagedText(resident, pages int, pageSize int64, adviseHost bool) string {
	s := fmt.Sprintf("%d/%d pages of %s", resident, pages, units.Bytes(pageSize))
	if adviseHost {
		s += AdviseHostText
	}
	return s
}

// AdviseHostText ends a managed placement's text when the pages that do
// not fit stay on the host (--managed-advise host).
const AdviseHostText = ", rest on the host"
