package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// vectorLoops emits the elementwise loops of vector.go in package cpu:
// maxAVX2, subAVX2, mulAVX2, subMulAVX2 and addAVX2. Each takes n8, a positive
// multiple of 8, and runs 4 vectors a step while 32 floats are left, then
// one.
func vectorLoops() {
	nan := GLOBL("vecNaN", RODATA|NOPTR)
	DATA(0, U32(math.Float32bits(float32(math.NaN()))))

	TEXT("maxAVX2", NOSPLIT, "func(x *float32, n8 int) float32")
	Doc(
		"maxAVX2 returns the largest of x[:n8], or NaN if one of them is NaN (n8 a positive",
		"multiple of 8). A zero result may have either sign. Requires AVX.",
	)
	Pragma("noescape")
	x := Load(Param("x"), RSI)
	n := Load(Param("n8"), RCX)
	acc := []VecPhysical{Y0, Y1, Y2, Y3}
	v := []VecPhysical{Y4, Y5, Y6, Y7}
	unord := []VecPhysical{Y8, Y9, Y10, Y11}
	seen := Y12 // lanes that met a NaN
	for _, a := range acc {
		VBROADCASTSS(Mem{Base: x}, a)
	}
	VXORPS(seen, seen, seen)
	elementwise(n, []Register{x}, func(i, disp int) {
		VMOVUPS(Mem{Base: x, Disp: disp}, v[i])
		VCMPPS(U8(3), v[i], v[i], unord[i]) // unordered: NaN
		VORPS(unord[i], seen, seen)
		VMAXPS(v[i], acc[i], acc[i])
	})
	VMAXPS(Y1, Y0, Y0)
	VMAXPS(Y3, Y2, Y2)
	VMAXPS(Y2, Y0, Y0)
	VEXTRACTF128(U8(1), Y0, X1)
	VMAXPS(X1, X0, X0)
	VPERMILPS(U8(0x4E), X0, X1) // swap the 64-bit halves
	VMAXPS(X1, X0, X0)
	VPERMILPS(U8(0xB1), X0, X1) // swap neighbours
	VMAXPS(X1, X0, X0)
	VMOVMSKPS(seen, EAX)
	TESTL(EAX, EAX)
	JE(LabelRef("ordered"))
	VMOVSS(nan, X0)
	Label("ordered")
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()

	TEXT("subAVX2", NOSPLIT, "func(x *float32, n8 int, c float32)")
	Doc("subAVX2 sets x[i] = x[i] − c for i < n8 (a positive multiple of 8). Requires AVX.")
	Pragma("noescape")
	scalarLoop(func(m Mem, c, r VecPhysical) {
		VMOVUPS(m, r)
		VSUBPS(c, r, r)
		VMOVUPS(r, m)
	})

	TEXT("mulAVX2", NOSPLIT, "func(x *float32, n8 int, c float32)")
	Doc("mulAVX2 sets x[i] = x[i] · c for i < n8 (a positive multiple of 8). Requires AVX.")
	Pragma("noescape")
	scalarLoop(func(m Mem, c, r VecPhysical) {
		VMULPS(m, c, r)
		VMOVUPS(r, m)
	})

	TEXT("subMulAVX2", NOSPLIT, "func(x *float32, n8 int, c, d float32)")
	Doc("subMulAVX2 sets x[i] = (x[i] − c) · d for i < n8 (a positive multiple of 8). Requires AVX.")
	Pragma("noescape")
	x = Load(Param("x"), RDI)
	n = Load(Param("n8"), RCX)
	VBROADCASTSS(addr("c"), Y14)
	VBROADCASTSS(addr("d"), Y15)
	elementwise(n, []Register{x}, func(i, disp int) {
		VMOVUPS(Mem{Base: x, Disp: disp}, v[i])
		VSUBPS(Y14, v[i], v[i])
		VMULPS(Y15, v[i], v[i])
		VMOVUPS(v[i], Mem{Base: x, Disp: disp})
	})
	VZEROUPPER()
	RET()

	TEXT("addAVX2", NOSPLIT, "func(z, x, y *float32, n8 int)")
	Doc("addAVX2 sets z[i] = x[i] + y[i] for i < n8 (a positive multiple of 8; z may be x or y).",
		"Requires AVX.")
	Pragma("noescape")
	z := Load(Param("z"), RDX)
	x = Load(Param("x"), RDI)
	y := Load(Param("y"), RSI)
	n = Load(Param("n8"), RCX)
	elementwise(n, []Register{z, x, y}, func(i, disp int) {
		VMOVUPS(Mem{Base: x, Disp: disp}, v[i])
		VADDPS(Mem{Base: y, Disp: disp}, v[i], v[i])
		VMOVUPS(v[i], Mem{Base: z, Disp: disp})
	})
	VZEROUPPER()
	RET()
}

// scalarLoop emits the body of a func(x *float32, n8 int, c float32) that
// applies op to each vector of x in place: op(m, c, r) with m the vector's
// address, c the broadcast scalar, r a free register.
func scalarLoop(op func(m Mem, c, r VecPhysical)) {
	x := Load(Param("x"), RDI)
	n := Load(Param("n8"), RCX)
	// Broadcast straight from memory: a legacy-SSE MOVSS (what Load emits)
	// into a register whose upper half is dirty costs hundreds of cycles.
	c := Y15
	VBROADCASTSS(addr("c"), c)
	r := []VecPhysical{Y0, Y1, Y2, Y3}
	elementwise(n, []Register{x}, func(i, disp int) {
		op(Mem{Base: x, Disp: disp}, c, r[i])
	})
	VZEROUPPER()
	RET()
}

// elementwise emits a loop over n floats (a positive multiple of 8) at the
// pointers ptrs: body(i, disp) handles vector i (0…3) of the step at byte
// offset disp; four vectors a step while at least 32 floats are left, then
// one.
func elementwise(n Register, ptrs []Register, body func(i, disp int)) {
	Label("by32")
	CMPQ(n, U8(32))
	JL(LabelRef("by8"))
	for i := 0; i < 4; i++ {
		body(i, 32*i)
	}
	for _, p := range ptrs {
		ADDQ(U8(128), p)
	}
	SUBQ(U8(32), n)
	JMP(LabelRef("by32"))
	Label("by8")
	TESTQ(n, n)
	JE(LabelRef("end"))
	body(0, 0)
	for _, p := range ptrs {
		ADDQ(U8(32), p)
	}
	SUBQ(U8(8), n)
	JMP(LabelRef("by8"))
	Label("end")
}

// addr is the stack address of a scalar argument.
func addr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// lanes emits a read-only 32-byte constant holding the bits v in all 8
// lanes.
func lanes(name string, v uint32) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(4*i, U32(v))
	}
	return m
}

// roundBF16Loop emits roundBF16AVX2, backend.RoundBF16 on 16 lanes at a
// time, on the bit patterns as that does: u + 0x7fff + ((u >> 16) & 1),
// top half kept (round to nearest, ties to even), except that a NaN
// (|u| > 0x7f800000) keeps its top half with the quiet bit set. Packing
// two vectors of 32-bit lanes to 16 bits (VPACKUSDW, exact: every lane is
// below 2¹⁶ after the shift) interleaves their 128-bit halves; VPERMQ puts
// them back in order.
func roundBF16Loop() {
	bias, one := lanes("bf16Bias", 0x7fff), lanes("bf16One", 1)
	abs, inf, quiet := lanes("bf16Abs", 0x7fffffff), lanes("bf16Inf", 0x7f800000), lanes("bf16Quiet", 0x00400000)

	TEXT("roundBF16AVX2", NOSPLIT, "func(dst *uint16, src *float32, n16 int)")
	Doc(
		"roundBF16AVX2 sets dst[i] to the bfloat16 bits of backend.RoundBF16(src[i]) for i < n16",
		"(a positive multiple of 16). Requires AVX2.",
	)
	Pragma("noescape")
	dst := Load(Param("dst"), RDI)
	src := Load(Param("src"), RSI)
	n := Load(Param("n16"), RCX)
	VMOVDQU(bias, Y10)
	VMOVDQU(one, Y11)
	VMOVDQU(abs, Y12)
	VMOVDQU(inf, Y13)
	VMOVDQU(quiet, Y14)
	u := []VecPhysical{Y0, Y1}
	r := []VecPhysical{Y2, Y3}
	q := []VecPhysical{Y4, Y5}
	m := []VecPhysical{Y6, Y7}
	Label("round16")
	TESTQ(n, n)
	JE(LabelRef("rounded"))
	for v := 0; v < 2; v++ {
		VMOVDQU(Mem{Base: src, Disp: 32 * v}, u[v])
		VPSRLD(U8(16), u[v], r[v])
		VPAND(Y11, r[v], r[v])    // the lowest kept bit
		VPADDD(Y10, r[v], r[v])   // + 0x7fff
		VPADDD(u[v], r[v], r[v])  // + u
		VPOR(Y14, u[v], q[v])     // a NaN made quiet
		VPAND(Y12, u[v], m[v])    // |u|
		VPCMPGTD(Y13, m[v], m[v]) // |u| > Inf: NaN
		VPBLENDVB(m[v], q[v], r[v], r[v])
		VPSRLD(U8(16), r[v], r[v])
	}
	VPACKUSDW(r[1], r[0], r[0])
	VPERMQ(U8(0xD8), r[0], r[0])
	VMOVDQU(r[0], Mem{Base: dst})
	ADDQ(U8(64), src)
	ADDQ(U8(32), dst)
	SUBQ(U8(16), n)
	JMP(LabelRef("round16"))
	Label("rounded")
	VZEROUPPER()
	RET()
}
