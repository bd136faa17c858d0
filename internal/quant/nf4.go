package quant

import "fmt"

// dequantizeNF4 dequantizes an NF4 tensor (bitsandbytes' dequantize_4bit
// with a nested absmax). Its layout in gpuz: the codes, two a byte, the
// first weight in the high nibble (n/2 bytes); one byte a block, the
// block's absmax in the signed dynamic 8-bit code; a float32 a group of
// NF4Group blocks, that group's absmax; the float32 offset.
func dequantizeNF4(dst []float32, src []byte) error {
	return fmt.Errorf("quant: NF4 is not built yet")
}
