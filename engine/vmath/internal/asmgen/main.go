// Command asmgen writes the assembly of package vmath (exp_amd64.s and its
// Go declarations exp_amd64_stub.go) with avo. Run it through
// `go generate` in engine/vmath.
//
// expAVX2 and expAVX512 are vmath's expFMA — math.Exp's FMA sequence in
// Go's src/math/exp_amd64.s — on 4 or 8 float64 lanes, two vectors a step,
// each operation the one the scalar code does, in its order, with the same
// constants, so each lane gets the scalar code's bits. The one difference
// is how k = round(x·log2e) becomes an integer: the scalar code converts
// with CVTSD2SL (round to nearest even); the loops add 1.5·2⁵², which
// rounds x·log2e to the nearest even integer the same way (exact for
// |x·log2e| < 2⁵¹) and leaves k in the low bits, from where it goes into
// the exponent field of 2^k. A step stops at the first two vectors holding
// a lane the sequence does not cover (x > 709.78 or NaN, or k outside
// [−1022, 1023]) and reports how far it got; vmath.Exp gives those lanes to
// the scalar code.
package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// unroll is the number of vectors a step of the loops handles (two
// independent chains of some 25 dependent operations keep the FMA units
// busier than one).
const unroll = 2

// bcast emits a read-only 64-byte constant holding the bits b in all 8
// float64 lanes (an AVX2 loop reads the first 32 bytes).
func bcast(name string, b uint64) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(8*i, U64(b))
	}
	return m
}

// paramAddr is the stack address of a parameter, for an instruction that
// reads it from memory.
func paramAddr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

func f64(name string, v float64) Mem { return bcast(name, math.Float64bits(v)) }

// consts are the constants of exp_amd64.s (and vmath's exp.go).
type consts struct {
	log2e, magic, overflow, kMin, kMax, ln2hi, ln2lo, sixteenth, one, two, bias Mem
	p                                                                           [9]Mem // p[k] = 1/k!, k = 2…8
}

func main() {
	ConstraintExpr("amd64")
	c := consts{
		log2e:     f64("expLog2e", 1.4426950408889634073599246810018920),
		magic:     f64("expMagic", 0x1.8p52),
		overflow:  f64("expOverflow", 7.09782712893384e+02),
		kMin:      f64("expKMin", -1022),
		kMax:      f64("expKMax", 1023),
		ln2hi:     f64("expLn2hi", 0.69314718055966295651160180568695068359375),
		ln2lo:     f64("expLn2lo", 0.28235290563031577122588448175013436025525412068e-12),
		sixteenth: f64("expSixteenth", 0.0625),
		one:       f64("expOne", 1),
		two:       f64("expTwo", 2),
		bias:      bcast("expBias", 1023),
	}
	for k, v := range []float64{2: 0.5, 3: 1.6666666666666666667e-1, 4: 4.1666666666666666667e-2,
		5: 8.3333333333333333333e-3, 6: 1.3888888888888888889e-3, 7: 1.9841269841269841270e-4,
		8: 2.4801587301587301587e-5} {
		if k >= 2 {
			c.p[k] = f64(fmt.Sprintf("expP%d", k), v)
		}
	}
	expLoop("expAVX2", 4, false, c)
	expLoop("expAVX512", 8, false, c)
	expLoop("expShiftedAVX2", 4, true, c)
	expLoop("expShiftedAVX512", 8, true, c)
	Generate()
}

// expLoop emits the loop over width-lane vectors (4: YMM, AVX2 and FMA;
// 8: ZMM, AVX-512F). In place on x, or, shifted, from float32s x to
// float64s dst of the exponentials of float64(x[i]) − m.
func expLoop(name string, width int, shifted bool, c consts) {
	block := width * unroll
	features := "AVX2 and FMA"
	if width == 8 {
		features = "AVX-512F"
	}
	if shifted {
		TEXT(name, NOSPLIT, "func(dst *float64, x *float32, n int, m float64) int")
		Doc(
			fmt.Sprintf("%s sets dst[i] = math.Exp(float64(x[i]) − m) (its FMA sequence) for i < n (a", name),
			fmt.Sprintf("multiple of %d), %d at a time, up to the first %d whose float64(x[i]) − m lie outside the", block, block, block),
			fmt.Sprintf("sequence's range (see vmath.reduce), and returns the number of values done. Requires %s.", features),
		)
	} else {
		TEXT(name, NOSPLIT, "func(x *float64, n int) int")
		Doc(
			fmt.Sprintf("%s replaces x[i] by math.Exp(x[i]) (its FMA sequence) for i < n (a multiple of %d),", name, block),
			fmt.Sprintf("%d at a time, up to the first %d holding a value outside the sequence's range (see", block, block),
			fmt.Sprintf("vmath.reduce), and returns the number of values done. Requires %s.", features),
		)
	}
	Pragma("noescape")
	vec := YMM
	if width == 8 {
		vec = ZMM
	}
	var x, src, n, shift Register
	if shifted {
		x = Load(Param("dst"), RDI)
		src = Load(Param("x"), RSI)
		shift = vec()
		VBROADCASTSD(paramAddr("m"), shift)
	} else {
		x = Load(Param("x"), RSI)
	}
	n = Load(Param("n"), RCX)
	done := RAX
	XORQ(done, done)
	var v, t, k [unroll]VecVirtual
	for j := range unroll {
		v[j], t[j], k[j] = vec(), vec(), vec()
	}

	Label("loop")
	CMPQ(done, n)
	JGE(LabelRef("out"))
	// t = x·log2e + 1.5·2⁵² holds k = round(x·log2e) in its low bits.
	for j := range unroll {
		if shifted {
			VCVTPS2PD(Mem{Base: src, Disp: 4 * width * j}, v[j])
			VSUBPD(shift, v[j], v[j])
		} else {
			VMOVUPD(Mem{Base: x, Disp: 8 * width * j}, v[j])
		}
		VMULPD(c.log2e, v[j], t[j])
		VADDPD(c.magic, t[j], t[j])
		VSUBPD(c.magic, t[j], k[j])
	}
	// Every lane covered: x ≤ overflow (false for NaN), kMin ≤ k ≤ kMax.
	if width == 4 {
		all, m := vec(), vec()
		for j := range unroll {
			VCMPPD(U8(0x12), c.overflow, v[j], m) // ≤, ordered
			if j == 0 {
				VMOVAPD(m, all)
			} else {
				VANDPD(m, all, all)
			}
			VCMPPD(U8(0x1D), c.kMin, k[j], m) // ≥, ordered
			VANDPD(m, all, all)
			VCMPPD(U8(0x12), c.kMax, k[j], m)
			VANDPD(m, all, all)
		}
		mask := GP32()
		VMOVMSKPD(all, mask)
		CMPL(mask, U8(0xF))
		JNE(LabelRef("out"))
	} else {
		for j := range unroll {
			if j == 0 {
				VCMPPD(U8(0x12), c.overflow, v[j], K1)
			} else {
				VCMPPD(U8(0x12), c.overflow, v[j], K1, K1) // under the mask K1: K1 &= …
			}
			VCMPPD(U8(0x1D), c.kMin, k[j], K1, K1)
			VCMPPD(U8(0x12), c.kMax, k[j], K1, K1)
		}
		mask := GP32()
		KMOVW(K1, mask)
		CMPL(mask, U8(0xFF))
		JNE(LabelRef("out"))
	}
	for j := range unroll {
		r, p, e, s := v[j], vec(), vec(), vec()
		// r = (x − k·ln2hi − k·ln2lo)/16
		VFNMADD231PD(c.ln2hi, k[j], r)
		VFNMADD231PD(c.ln2lo, k[j], r)
		VMULPD(c.sixteenth, r, r)
		// P(r) by Horner's rule, e = r·P(r) = e^r − 1
		VMOVUPD(c.p[8], p)
		for i := 7; i >= 2; i-- {
			VFMADD213PD(c.p[i], r, p) // p = p·r + 1/i!
		}
		VFMADD213PD(c.one, r, p)
		VMULPD(p, r, e)
		// e ← e·(e + 2) three times, then e·(e + 2) + 1 fused
		for range 3 {
			VADDPD(c.two, e, s)
			VMULPD(s, e, e)
		}
		VADDPD(c.two, e, s)
		VFMADD213PD(c.one, s, e)
		// times 2^k: (k + 1023) << 52, k from t's low bits
		VPADDQ(c.bias, t[j], t[j])
		VPSLLQ(U8(52), t[j], t[j])
		VMULPD(t[j], e, e)
		VMOVUPD(e, Mem{Base: x, Disp: 8 * width * j})
	}
	ADDQ(U32(8*block), x)
	if shifted {
		ADDQ(U32(4*block), src)
	}
	ADDQ(U32(block), done)
	JMP(LabelRef("loop"))

	Label("out")
	VZEROUPPER()
	Store(done, ReturnIndex(0))
	RET()
}
