package device

import (
	"testing"

	"gpuz/internal/perfmodel"
)

// TestCaps checks what each device of this package says it can do: the
// host that it is the host and its memory host memory, and nothing more;
// a simulated GPU that it is the simulated GPU in host memory, its
// description, its managed memory, its reservations ahead and the memory
// it holds unallocated, and its profile when made from one; no device here
// a compute capability, a kernel compile or a pinned path.
func TestCaps(t *testing.T) {
	h100, err := perfmodel.Lookup("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		dev         Device
		kind        Kind
		simulated   bool
		hostMemory  bool
		profile     string // the profile's name, "" for none
		described   bool
		managed     bool
		reservation bool // a Reserver and a Holder
	}{
		{name: "host", dev: NewHost(), kind: KindHost, hostMemory: true},
		{name: "sim", dev: NewSim(1<<30, nil), kind: KindSim, simulated: true, hostMemory: true, described: true, managed: true, reservation: true},
		{name: "sim profile", dev: NewSimProfile(h100, nil), kind: KindSim, simulated: true, hostMemory: true, profile: "h100-sxm", described: true, managed: true, reservation: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.dev.Close()
			c := tt.dev.Caps()
			if c.Kind != tt.kind {
				t.Errorf("Kind = %v, want %v", c.Kind, tt.kind)
			}
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
			if got := c.Holder != nil; got != tt.reservation {
				t.Errorf("Holder = %v, want one: %v", c.Holder, tt.reservation)
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

// TestKindString checks that each kind is named by the word of --device
// that opens such a device, and that a kind of no device says so.
func TestKindString(t *testing.T) {
	for _, tt := range []struct {
		kind Kind
		want string
	}{
		{KindHost, "cpu"},
		{KindSim, "sim"},
		{KindCUDA, "cuda"},
		{KindUnknown, "unknown"},
		{KindCUDA + 1, "unknown"},
	} {
		if got := tt.kind.String(); got != tt.want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(tt.kind), got, tt.want)
		}
	}
}
