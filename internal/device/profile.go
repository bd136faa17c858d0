package device

import "gpuz/internal/perfmodel"

// NewSimProfile returns a simulated device of the profile's memory size,
// named "sim:" and the profile's name ("sim:rtx4060-laptop"), that records
// its holdings in ledger as NewSim's does. Its times are still host
// times; the profile says what the GPU would do.
func NewSimProfile(p perfmodel.Profile, ledger *Ledger) *Sim {
	s := NewSim(p.MemoryBytes, ledger)
	s.name = "sim:" + p.Name
	s.profile = &p
	return s
}

// Profile returns the GPU profile the device was made from, false when it
// was made from a size (Caps.Profile).
func (s *Sim) Profile() (perfmodel.Profile, bool) {
	if s.profile == nil {
		return perfmodel.Profile{}, false
	}
	return *s.profile, true
}
