package checkpoint

import (
	"encoding/binary"
	"math"
)

// dtypeSize gives the bytes per element of every dtype of the safetensors
// format. Any of them may appear in a file; ReadInto converts F32, F16 and
// BF16.
var dtypeSize = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"F64": 8, "I64": 8, "U64": 8,
}

// convertible reports whether decodeInto converts the dtype.
func convertible(dtype string) bool {
	return dtype == "F32" || dtype == "F16" || dtype == "BF16"
}

// decodeInto converts the little-endian bytes src of a convertible dtype
// into dst (len(src) = len(dst)·size).
func decodeInto(dst []float32, src []byte, dtype string) {
	switch dtype {
	case "F32":
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case "BF16":
		for i := range dst {
			dst[i] = bf16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case "F16":
		for i := range dst {
			dst[i] = f16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	}
}

// bf16ToF32 widens a bfloat16: it is the top half of a float32.
func bf16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// f16ToF32 widens an IEEE 754 half (1 sign, 5 exponent bits biased by 15,
// 10 mantissa bits) exactly, subnormals, infinities and NaN payloads included.
func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf (mant 0) or NaN, payload kept
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal mant·2⁻²⁴: normalise into a float32 exponent
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
	default:
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	}
}
