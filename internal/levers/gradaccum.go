package levers

import (
	"fmt"
	"strconv"
)

// GradAccum is gradient accumulation (--grad-accum K): a training step of
// batch B runs K micro-batches of B/K samples, adds their gradients and
// takes one optimizer step on their mean, so that the step is the batch
// B's while the activations saved for the backward pass are a
// micro-batch's, 1/K of them. 0, the zero value, and 1 accumulate
// nothing.
type GradAccum int

// MaxGradAccum bounds K: far beyond any batch a run holds, and small
// enough that K·micro-batch arithmetic never nears int's limits.
const MaxGradAccum = 1 << 20

// ParseGradAccum reads K as a flag gives it: a positive decimal integer,
// at most MaxGradAccum.
func ParseGradAccum(s string) (GradAccum, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxGradAccum || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("grad-accum %q is not a whole number of micro-batches from 1 to %d", s, MaxGradAccum)
	}
	return GradAccum(n), nil
}

// Setting returns K, 1 for 0 (the zero value, as an unset field holds
// it).
func (k GradAccum) Setting() GradAccum { return max(k, 1) }

// On reports whether k accumulates over more than one micro-batch.
func (k GradAccum) On() bool { return k > 1 }

// Validate reports a negative or too large K; 0 is the default, 1.
func (k GradAccum) Validate() error {
	if k < 0 || k > MaxGradAccum {
		return fmt.Errorf("grad-accum %d is not a whole number of micro-batches from 1 to %d", int(k), MaxGradAccum)
	}
	return nil
}

// MicroBatch returns the samples of each of k's micro-batches of a batch
// of batch samples, refusing a batch that k does not divide, in one line
// naming both.
func (k GradAccum) MicroBatch(batch int) (int, error) {
	if err := k.Validate(); err != nil {
		return 0, err
	}
	n := int(k.Setting())
	if batch%n != 0 {
		return 0, fmt.Errorf("--grad-accum %d: the batch (%d) is not a multiple of it", n, batch)
	}
	return batch / n, nil
}

// String returns K in decimal, 1 for 0.
func (k GradAccum) String() string { return strconv.Itoa(int(k.Setting())) }
