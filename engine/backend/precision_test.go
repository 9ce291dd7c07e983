package backend

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// RoundBF16 on hand-picked bit patterns: ties to even both ways, the
// neighbours of a tie, signs, zeros, infinities, NaNs (a payload in the
// low bits only must stay a NaN), overflow past the largest bf16, and
// subnormals (a carry into the exponent makes the smallest normal).
func TestRoundBF16Cases(t *testing.T) {
	for _, c := range []struct{ in, want uint32 }{
		{0x3f800000, 0x3f800000}, // 1
		{0x3f808000, 0x3f800000}, // 1 + 2⁻⁸: a tie, 0x3f80 is even
		{0x3f818000, 0x3f820000}, // a tie, 0x3f81 is odd: up to even
		{0x3f808001, 0x3f810000}, // just above the tie
		{0x3f807fff, 0x3f800000}, // just below
		{0xbf808001, 0xbf810000}, // the same, negative
		{0xbf818000, 0xbf820000},
		{0x00000000, 0x00000000}, // +0
		{0x80000000, 0x80000000}, // −0
		{0x7f800000, 0x7f800000}, // +Inf
		{0xff800000, 0xff800000}, // −Inf
		{0x7fc00000, 0x7fc00000}, // quiet NaN
		{0x7f800001, 0x7fc00000}, // signalling NaN, payload in the low bits: quiet, not Inf
		{0xff812345, 0xffc10000}, // negative NaN: top payload bits kept
		{0x7f7f7fff, 0x7f7f0000}, // below the tie under the largest bf16
		{0x7f7f8000, 0x7f800000}, // tie above the largest bf16 (odd): Inf
		{0x7f7fffff, 0x7f800000}, // the largest float32: Inf
		{0xff7fffff, 0xff800000},
		{0x00000001, 0x00000000}, // smallest subnormal: 0
		{0x00008000, 0x00000000}, // subnormal tie, 0 is even
		{0x00018000, 0x00020000}, // subnormal tie, odd: up
		{0x00010001, 0x00010000},
		{0x007fffff, 0x00800000}, // largest subnormal: the smallest normal
		{0x807fffff, 0x80800000},
	} {
		got := math.Float32bits(RoundBF16(math.Float32frombits(c.in)))
		if got != c.want {
			t.Errorf("RoundBF16(%#08x) = %#08x, want %#08x", c.in, got, c.want)
		}
	}
}

// On random normal numbers RoundBF16 is big.Float's rounding to 8
// significant bits, ties to even (an independent reference; big.Float has
// no subnormals, hence the hand cases above).
func TestRoundBF16MatchesBigFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 200_000 {
		u := rng.Uint32()
		if e := u >> 23 & 0xff; e == 0 || e == 0xff {
			continue
		}
		if rng.IntN(4) == 0 { // many exact ties
			u = u&^0xffff | 0x8000
		}
		f := math.Float32frombits(u)
		want, _ := new(big.Float).SetMode(big.ToNearestEven).SetPrec(8).SetFloat64(float64(f)).Float32()
		if got := RoundBF16(f); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("RoundBF16(%#08x) = %#08x, want %#08x", u, math.Float32bits(got), math.Float32bits(want))
		}
	}
}

func TestParsePrecision(t *testing.T) {
	for s, want := range map[string]Precision{"": F32, "f32": F32, "bf16": BF16} {
		if p, err := ParsePrecision(s); err != nil || p != want {
			t.Errorf("ParsePrecision(%q) = %q, %v", s, p, err)
		}
	}
	if _, err := ParsePrecision("fp16"); err == nil || err.Error() != `precision: unknown "fp16" (valid: f32, bf16)` {
		t.Errorf("ParsePrecision(fp16) = %v", err)
	}
}

// The CPU's GemmBF16 on ToBF16's outputs is Sgemm on the rounded inputs,
// bit for bit, in all three layouts the engine uses.
