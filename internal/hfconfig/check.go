package hfconfig

import "fmt"

// Check says what a sequence length of seqLen tokens means for c. It
// refuses (err) what gpuz would compute differently from transformers: a
// GPT-2 sequence longer than n_positions (wpe has that many rows) and a
// sliding window shorter than the sequence (gpuz attends to the whole
// causal prefix). It warns, one line each, of what gpuz computes exactly
// but the user may not expect: sizes the file leaves out that take
// transformers' defaults (Defaulted), a sliding window that cannot matter
// at this length, dropout the file declares and gpuz does not apply, llama3
// scaling whose original_max_position_embeddings is not below
// max_position_embeddings (transformers' _validate_llama3_parameters warns
// of it and computes on; real snapshots carry it), and a RoPE model run
// past max_position_embeddings.
func (c Config) Check(seqLen int) (warnings []string, err error) {
	if seqLen <= 0 {
		return nil, fmt.Errorf("the sequence length must be positive, got %d", seqLen)
	}
	if c.Arch == nil {
		return nil, c.Validate()
	}
	maxPos := c.Arch.keys.maxPos
	if c.Arch.Positions == Learned && seqLen > c.MaxPositions {
		return nil, fmt.Errorf("the sequence length %d is beyond %s %d: %s learns one position embedding per position", seqLen, maxPos, c.MaxPositions, c.Arch.Name)
	}
	if c.Defaulted != "" {
		warnings = append(warnings, "the config leaves out sizes that transformers fills in; gpuz takes the same defaults: "+c.Defaulted)
	}
	if c.SlidingWindow > 0 {
		if c.SlidingWindow < seqLen {
			return nil, fmt.Errorf("sliding_window %d is shorter than the sequence length %d: gpuz does not build sliding-window attention", c.SlidingWindow, seqLen)
		}
		warnings = append(warnings, fmt.Sprintf("sliding_window %d cannot matter at sequence length %d: attention is computed over the whole causal prefix", c.SlidingWindow, seqLen))
	}
	switch {
	case c.Dropouts != "":
		warnings = append(warnings, fmt.Sprintf("the config declares dropout (%s); gpuz trains without dropout", c.Dropouts))
	case c.Dropout > 0:
		warnings = append(warnings, fmt.Sprintf("the config declares dropout %g; gpuz trains without dropout", c.Dropout))
	}
	if s := c.RopeScaling; s != nil && s.Type == "llama3" && s.OriginalMaxPositions >= c.MaxPositions {
		warnings = append(warnings, fmt.Sprintf("rope_scaling.original_max_position_embeddings %d is not below %s %d: llama3 scaling extends a shorter original context; gpuz scales the frequencies as transformers does, which warns of it too",
			s.OriginalMaxPositions, maxPos, c.MaxPositions))
	}
	if c.Arch.Positions == Rotary && seqLen > c.MaxPositions {
		warnings = append(warnings, fmt.Sprintf("the sequence length %d is beyond %s %d: rotary positions past the trained range", seqLen, maxPos, c.MaxPositions))
	}
	return warnings, nil
}

// MaxPositionsKey names the config key of MaxPositions in the model's
// family: max_position_embeddings, or GPT-2's n_positions.
func (c Config) MaxPositionsKey() string {
	if c.Arch == nil {
		return "max_position_embeddings"
	}
	return c.Arch.keys.maxPos
}
