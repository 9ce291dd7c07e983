package backend

import (
	"fmt"
	"math"
)

// Precision is the number format of the inputs of a model's matrix
// products (see model.Model.Use). Everything else is float32 at either.
type Precision string

const (
	// F32: products read float32 inputs (the default).
	F32 Precision = "f32"
	// BF16: products read their inputs rounded to bfloat16 (weights from a
	// bf16 copy of the float32 master parameters, activations and
	// gradients rounded on their way in) and accumulate in float32.
	BF16 Precision = "bf16"
)

// ParsePrecision reads a precision setting: "" or "f32", or "bf16".
func ParsePrecision(s string) (Precision, error) {
	switch Precision(s) {
	case "", F32:
		return F32, nil
	case BF16:
		return BF16, nil
	}
	return "", fmt.Errorf("precision: unknown %q (valid: f32, bf16)", s)
}

// RoundBF16 is f rounded to the nearest bfloat16 (ties to even), widened
// back to float32, which is exact: bf16 is the top 16 bits of a float32
// (sign, the same 8 exponent bits, 7 mantissa bits). Adding 0x7fff plus
// the lowest kept bit, then truncating, is round-to-nearest-even on the
// bit pattern; a carry out of the mantissa steps the exponent, so it holds
// for subnormals and rounds values past the largest bf16 (beyond half an
// ulp) to ±Inf, as IEEE rounding does. NaNs stay NaNs: their top bits are
// kept with the quiet bit set, since truncating a NaN whose payload lives
// in the low 16 bits would give Inf. It is the f32_to_bf16 kernel of the
// CUDA backend, bit for bit.
func RoundBF16(f float32) float32 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return math.Float32frombits((u | 0x00400000) &^ 0xffff)
	}
	u += 0x7fff + (u>>16)&1
	return math.Float32frombits(u &^ 0xffff)
}
