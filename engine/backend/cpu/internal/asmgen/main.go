// Command asmgen writes the assembly of package cpu (asm_amd64.s and its
// Go declarations asm_amd64_stub.go) with avo: the AVX2+FMA exponential
// and the elementwise vector loops the kernels' plain Go loops hand their
// long stretches to (Go does not vectorise). Run it through `go generate`
// in engine/backend/cpu.
//
// expAVX2 is expInPlace's scalar algorithm (Cephes' expf, see exp.go) on 8
// lanes at a time: x = n·ln2 + r, e^r = 1 + r + r²·q(r) with q by Estrin's
// scheme, 2ⁿ put in the exponent bits. It stops at the first block of 8
// holding a value outside [−87.3, 88.3] (or NaN) and reports how far it got,
// leaving that block to the scalar code, which handles overflow, gradual
// underflow and NaN.
//
// The elementwise loops (vector.go) do each element's arithmetic exactly as
// the Go loops they stand for, one IEEE operation at a time in the same
// order and never fused, so they give the same bits.
package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// bcast emits a read-only 32-byte constant holding v in all 8 lanes, as
// bits: the assembler reads a whole-number float constant ($(1)) as an
// integer.
func bcast(name string, v float32) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(4*i, U32(math.Float32bits(v)))
	}
	return m
}

func main() {
	ConstraintExpr("amd64")
	exp()
	vectorLoops()
	activationLoops()
	roundBF16Loop()
	Generate()
}

// exp emits expAVX2.
func exp() {
	lo, hi := bcast("expLo", -87.3), bcast("expHi", 88.3)
	log2e, magic := bcast("expLog2e", 1.44269504088896341), bcast("expMagic", 12582912)
	ln2hi, ln2lo := bcast("expLn2hi", 0.693359375), bcast("expLn2lo", -2.12194440e-4)
	one := bcast("expOne", 1)
	c := []Mem{
		bcast("expC0", 5.0000001201e-1), bcast("expC1", 1.6666665459e-1),
		bcast("expC2", 4.1665795894e-2), bcast("expC3", 8.3334519073e-3),
		bcast("expC4", 1.3981999507e-3), bcast("expC5", 1.9875691500e-4),
	}
	bias := GLOBL("expBias", RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(4*i, U32(127))
	}

	TEXT("expAVX2", NOSPLIT, "func(x *float32, n8 int) int")
	Doc(
		"expAVX2 replaces x[i] by e^x[i] for i < n8 (a multiple of 8), 8 at a time, up to the",
		"first block of 8 with a value outside [-87.3, 88.3] or a NaN, and returns the number",
		"of values done. Requires AVX2 and FMA.",
	)
	Pragma("noescape")
	x := Load(Param("x"), RSI)
	n := Load(Param("n8"), RCX)
	done := RAX
	XORQ(done, done)
	v, t, k, r, r2, a, b, q, m2 := YMM(), YMM(), YMM(), YMM(), YMM(), YMM(), YMM(), YMM(), YMM()
	mask := GP32()

	Label("loop")
	CMPQ(done, n)
	JGE(LabelRef("out"))
	VMOVUPS(Mem{Base: x}, v)
	VCMPPS(U8(0x1D), lo, v, t)  // v ≥ lo (ordered: false for NaN)
	VCMPPS(U8(0x12), hi, v, m2) // v ≤ hi
	VANDPS(m2, t, t)
	VMOVMSKPS(t, mask)
	CMPL(mask, U32(0xFF))
	JNE(LabelRef("out"))
	// t = v·log2e + magic rounds v·log2e to an integer in the low mantissa
	// bits; n = t − magic; k = that integer.
	VMOVUPS(magic, t)
	VFMADD231PS(log2e, v, t)
	VPSUBD(magic, t, k)
	VSUBPS(magic, t, t)
	// r = v − n·ln2hi − n·ln2lo
	VFNMADD231PS(ln2hi, t, v)
	VFNMADD231PS(ln2lo, t, v)
	VMOVAPS(v, r)
	VMULPS(r, r, r2)
	// q = (c0 + c1·r) + r²·(c2 + c3·r) + r⁴·(c4 + c5·r)
	VMOVUPS(c[0], a)
	VFMADD231PS(c[1], r, a)
	VMOVUPS(c[2], b)
	VFMADD231PS(c[3], r, b)
	VMOVUPS(c[4], q)
	VFMADD231PS(c[5], r, q)
	VFMADD231PS(r2, b, a) // a += b·r²
	VMULPS(r2, r2, b)     // r⁴
	VFMADD231PS(b, q, a)  // a += q·r⁴
	// p = 1 + r + r²·q
	VFMADD231PS(r2, a, r)
	VADDPS(one, r, r)
	// 2ⁿ = (k + 127) << 23
	VPADDD(bias, k, k)
	VPSLLD(U8(23), k, k)
	VMULPS(k, r, r)
	VMOVUPS(r, Mem{Base: x})
	ADDQ(U32(32), x)
	ADDQ(U32(8), done)
	JMP(LabelRef("loop"))

	Label("out")
	VZEROUPPER()
	Store(done, ReturnIndex(0))
	RET()
}
