package device

import (
	"testing"

	"gpuz/internal/perfmodel"
)

// TestCaps checks what each device of this package says it can do: the
// host that its memory is host memory and nothing more; a simulated GPU
// that it is simulated in host memory, its description, its
// managed memory and its reservations ahead, and its profile when made
// from one; no device here a compute capability, a kernel compile or a
// pinned path.
func TestCaps(t *testing.T) {
	h100, err := perfmodel.Lookup("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		dev         Device
		simulated   bool
		hostMemory  bool
		profile     string // the profile's name, "" for none
		described   bool
		managed     bool
		reservation bool
	}{
		{name: "host", dev: NewHost(), hostMemory: true},
		{name: "sim", dev: NewSim(1<<30, nil), simulated: true, hostMemory: true, described: true, managed: true, reservation: true},
		{name: "sim profile", dev: NewSimProfile(h100, nil), simulated: true, hostMemory: true, profile: "h100-sxm", described: true, managed: true, reservation: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.dev.Close()
			c := tt.dev.Caps()
			if c.Simulated != tt.simulated {
				t.Errorf("Simulated = %v, want %v", c.Simulated, tt.simulated)
			}
			if c.HostMemory != tt.hostMemory {
				t.Errorf("HostMemory = %v, want %v", c.HostMemory, tt.hostMemory)
			}
			if got := profileName(c.Profile); got != tt.profile {
				t.Errorf("Profile = %q, want %q", got, tt.profile)
			}
			if got := c.Description != nil; got != tt.described || (got && c.Description["name"] != tt.dev.Name()) {
				t.Errorf("Description = %v, want one (%v) naming %s", c.Description, tt.described, tt.dev.Name())
			}
			if got := c.Managed != nil; got != tt.managed {
				t.Errorf("Managed = %v, want one: %v", c.Managed, tt.managed)
			}
			if got := c.Reserver != nil; got != tt.reservation {
				t.Errorf("Reserver = %v, want one: %v", c.Reserver, tt.reservation)
			}
			if c.ComputeCapability != "" || c.Compile != nil || c.Pinned != nil {
				t.Errorf("capability %q, compile %v, pinned %v: want none", c.ComputeCapability, c.Compile, c.Pinned)
			}
		})
	}
}

// profileName is p's name, "" for nil.
func profileName(p *perfmodel.Profile) string {
	if p == nil {
		return ""
	}
	return p.Name
}
