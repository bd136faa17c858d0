package device

// Cost is the work of one launch of an op on a device: its floating-point
// operations and the bytes of device memory it reads and writes (float32,
// 4 bytes an element). A performance model reads it against a device's
// peak FLOP rate and memory bandwidth.
type Cost struct {
	FLOPs      int64
	ReadBytes  int64
	WriteBytes int64
}

// Bytes is the device memory traffic: ReadBytes + WriteBytes.
func (c Cost) Bytes() int64 { return c.ReadBytes + c.WriteBytes }

// Plus returns the sum of c and d.
func (c Cost) Plus(d Cost) Cost {
	return Cost{FLOPs: c.FLOPs + d.FLOPs, ReadBytes: c.ReadBytes + d.ReadBytes, WriteBytes: c.WriteBytes + d.WriteBytes}
}
