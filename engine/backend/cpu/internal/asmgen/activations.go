package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// activationLoops emits the vector loops of the layer kernels (rope.go,
// swiglu.go, rmsnorm.go): each computes an element as the Go loop it
// stands for writes it, operation by operation.
func activationLoops() {
	one := GLOBL("vecOne", RODATA|NOPTR)
	DATA(0, U32(math.Float32bits(1)))
	signBit := GLOBL("vecSign", RODATA|NOPTR)
	DATA(0, U32(0x80000000))

	TEXT("ropeAVX2", NOSPLIT, "func(dst, src, cos, sin *float32, half, n8 int, sign float32)")
	Doc(
		"ropeAVX2 sets, for j < n8 (a positive multiple of 8, at most half), with a = src[j],",
		"b = src[half+j], s = sign·sin[j]: dst[j] = a·cos[j] − b·s, dst[half+j] = b·cos[j] + a·s.",
		"Requires AVX.",
	)
	Pragma("noescape")
	{
		dst, src := Load(Param("dst"), RDI), Load(Param("src"), RSI)
		cs, sn := Load(Param("cos"), R8), Load(Param("sin"), R9)
		half := Load(Param("half"), R10)
		n := Load(Param("n8"), RCX)
		SHLQ(U8(2), half) // bytes
		sign := Y15
		VBROADCASTSS(addr("sign"), sign)
		a, b, c, s, t := Y0, Y1, Y2, Y3, Y4
		elementwise1(n, []Register{dst, src, cs, sn}, func() {
			VMOVUPS(Mem{Base: src}, a)
			VMOVUPS(Mem{Base: src, Index: half, Scale: 1}, b)
			VMOVUPS(Mem{Base: cs}, c)
			VMULPS(Mem{Base: sn}, sign, s)
			VMULPS(c, a, t)  // a·c
			VMULPS(s, b, Y5) // b·s
			VSUBPS(Y5, t, t)
			VMOVUPS(t, Mem{Base: dst})
			VMULPS(c, b, t)  // b·c
			VMULPS(s, a, Y5) // a·s
			VADDPS(Y5, t, t)
			VMOVUPS(t, Mem{Base: dst, Index: half, Scale: 1})
		})
		VZEROUPPER()
		RET()
	}

	TEXT("negAVX2", NOSPLIT, "func(dst, src *float32, n8 int)")
	Doc("negAVX2 sets dst[i] = −src[i] for i < n8 (a positive multiple of 8). Requires AVX.")
	Pragma("noescape")
	{
		dst, src := Load(Param("dst"), RDI), Load(Param("src"), RSI)
		n := Load(Param("n8"), RCX)
		VBROADCASTSS(signBit, Y15)
		elementwise1(n, []Register{dst, src}, func() {
			VXORPS(Mem{Base: src}, Y15, Y0)
			VMOVUPS(Y0, Mem{Base: dst})
		})
		VZEROUPPER()
		RET()
	}

	TEXT("swigluAVX2", NOSPLIT, "func(out, gate, up, e *float32, n8 int)")
	Doc("swigluAVX2 sets out[i] = gate[i] / (1 + e[i]) · up[i] for i < n8 (a positive multiple",
		"of 8). Requires AVX.")
	Pragma("noescape")
	{
		out, gate, up, e := Load(Param("out"), RDI), Load(Param("gate"), RSI), Load(Param("up"), RDX), Load(Param("e"), R8)
		n := Load(Param("n8"), RCX)
		VBROADCASTSS(one, Y15)
		elementwise1(n, []Register{out, gate, up, e}, func() {
			VADDPS(Mem{Base: e}, Y15, Y0)
			VMOVUPS(Mem{Base: gate}, Y1)
			VDIVPS(Y0, Y1, Y1)
			VMULPS(Mem{Base: up}, Y1, Y1)
			VMOVUPS(Y1, Mem{Base: out})
		})
		VZEROUPPER()
		RET()
	}

	TEXT("swigluBackAVX2", NOSPLIT, "func(dgate, dup, dout, gate, up, e *float32, n8 int)")
	Doc("swigluBackAVX2 sets, for i < n8 (a positive multiple of 8), with g = gate[i] and",
		"s = 1 / (1 + e[i]): dup[i] += dout[i]·g·s, dgate[i] += dout[i]·up[i]·s·(1 + g·(1 − s)).",
		"Requires AVX.")
	Pragma("noescape")
	{
		dgate, dup, dout := Load(Param("dgate"), RDI), Load(Param("dup"), RSI), Load(Param("dout"), RDX)
		gate, up, e := Load(Param("gate"), R8), Load(Param("up"), R9), Load(Param("e"), R10)
		n := Load(Param("n8"), RCX)
		VBROADCASTSS(one, Y15)
		g, s, d, t, u := Y0, Y1, Y2, Y3, Y4
		elementwise1(n, []Register{dgate, dup, dout, gate, up, e}, func() {
			VMOVUPS(Mem{Base: gate}, g)
			VADDPS(Mem{Base: e}, Y15, t)
			VDIVPS(t, Y15, s) // s = 1 / (1 + e)
			VMOVUPS(Mem{Base: dout}, d)
			VMULPS(g, d, t) // dout·g
			VMULPS(s, t, t) // ·s
			VADDPS(Mem{Base: dup}, t, t)
			VMOVUPS(t, Mem{Base: dup})
			VMULPS(Mem{Base: up}, d, t) // dout·up
			VMULPS(s, t, t)             // ·s
			VSUBPS(s, Y15, u)           // 1 − s
			VMULPS(u, g, u)             // g·(1 − s)
			VADDPS(Y15, u, u)           // 1 + g·(1 − s)
			VMULPS(u, t, t)
			VADDPS(Mem{Base: dgate}, t, t)
			VMOVUPS(t, Mem{Base: dgate})
		})
		VZEROUPPER()
		RET()
	}

	TEXT("rmsScaleAVX2", NOSPLIT, "func(y, x, w *float32, n8 int, r float32)")
	Doc("rmsScaleAVX2 sets y[i] = x[i]·r·w[i] for i < n8 (a positive multiple of 8). Requires AVX.")
	Pragma("noescape")
	{
		y, x, w := Load(Param("y"), RDI), Load(Param("x"), RSI), Load(Param("w"), RDX)
		n := Load(Param("n8"), RCX)
		VBROADCASTSS(addr("r"), Y15)
		elementwise1(n, []Register{y, x, w}, func() {
			VMULPS(Mem{Base: x}, Y15, Y0)
			VMULPS(Mem{Base: w}, Y0, Y0)
			VMOVUPS(Y0, Mem{Base: y})
		})
		VZEROUPPER()
		RET()
	}

	TEXT("rmsBackAVX2", NOSPLIT, "func(dx, x, w, dy *float32, n8 int, r, k float32)")
	Doc("rmsBackAVX2 sets dx[i] += r·(w[i]·dy[i] − x[i]·k) for i < n8 (a positive multiple of 8).",
		"Requires AVX.")
	Pragma("noescape")
	{
		dx, x, w, dy := Load(Param("dx"), RDI), Load(Param("x"), RSI), Load(Param("w"), RDX), Load(Param("dy"), R8)
		n := Load(Param("n8"), RCX)
		VBROADCASTSS(addr("r"), Y14)
		VBROADCASTSS(addr("k"), Y15)
		elementwise1(n, []Register{dx, x, w, dy}, func() {
			VMOVUPS(Mem{Base: w}, Y0)
			VMULPS(Mem{Base: dy}, Y0, Y0) // w·dy
			VMULPS(Mem{Base: x}, Y15, Y1) // x·k
			VSUBPS(Y1, Y0, Y0)
			VMULPS(Y0, Y14, Y0) // r·(…)
			VADDPS(Mem{Base: dx}, Y0, Y0)
			VMOVUPS(Y0, Mem{Base: dx})
		})
		VZEROUPPER()
		RET()
	}

	TEXT("rmsWeightAVX2", NOSPLIT, "func(dw, dy, x *float32, n8 int, r float32)")
	Doc("rmsWeightAVX2 sets dw[i] += dy[i]·x[i]·r for i < n8 (a positive multiple of 8).",
		"Requires AVX.")
	Pragma("noescape")
	{
		dw, dy, x := Load(Param("dw"), RDI), Load(Param("dy"), RSI), Load(Param("x"), RDX)
		n := Load(Param("n8"), RCX)
		VBROADCASTSS(addr("r"), Y15)
		elementwise1(n, []Register{dw, dy, x}, func() {
			VMOVUPS(Mem{Base: dy}, Y0)
			VMULPS(Mem{Base: x}, Y0, Y0)
			VMULPS(Y15, Y0, Y0)
			VADDPS(Mem{Base: dw}, Y0, Y0)
			VMOVUPS(Y0, Mem{Base: dw})
		})
		VZEROUPPER()
		RET()
	}
}

// elementwise1 emits a loop over n floats (a positive multiple of 8) at the
// pointers ptrs, one vector a step: body handles the vector at each
// pointer's current position.
func elementwise1(n Register, ptrs []Register, body func()) {
	Label("by8")
	TESTQ(n, n)
	JE(LabelRef("end"))
	body()
	for _, p := range ptrs {
		ADDQ(U8(32), p)
	}
	SUBQ(U8(8), n)
	JMP(LabelRef("by8"))
	Label("end")
}
