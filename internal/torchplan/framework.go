// Package torchplan plans what PyTorch with transformers' modules holds
// at the peak of a decoder's training step, beside gpuz's own plan: the
// parameters as loaded, autocast's 16-bit copies, gradients, AdamW's
// moments, the forward pass's saved tensors op by op (one table of rules,
// rules.go, from derivatives.yaml and transformers' modeling files), the
// loss's float32 log-softmax and the backward pass's transient peak.
package torchplan

import (
	"fmt"
	"strings"
)

// Framework is the framework a plan is for: gpuz's engine, or PyTorch
// with transformers.
type Framework string

// The frameworks.
const (
	Gpuz     Framework = "gpuz"       // gpuz's own engine
	Torch    Framework = "torch"      // PyTorch 2.x with a current transformers
	Torch113 Framework = "torch-1.13" // PyTorch 1.13 (Debian's build, which CI runs)
)

// Frameworks are the values --framework takes.
var Frameworks = []Framework{Gpuz, Torch, Torch113}

// ParseFramework reads --framework's value.
func ParseFramework(s string) (Framework, error) {
	for _, f := range Frameworks {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(Frameworks))
	for i, f := range Frameworks {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown framework %q (want %s)", s, strings.Join(names, ", "))
}

// IsTorch says whether f is one of PyTorch's versions.
func (f Framework) IsTorch() bool { return f == Torch || f == Torch113 }

// versions is the rules' version set of f.
func (f Framework) versions() (versions, error) {
	switch f {
	case Torch:
		return v2, nil
	case Torch113:
		return v113, nil
	}
	return 0, fmt.Errorf("framework %q has no PyTorch rules", f)
}
