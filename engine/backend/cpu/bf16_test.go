package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu/gemm"
)

// TestPackLinearBF16: PackLinear keeps bf16 panels for bf16 weights and
// for float32 weights that are all bf16-exact, float32 panels otherwise,
// and every product equals Gemm on the float32 weights bit for bit (x in
// float32 and in bf16), for 2 rows (the dot path) and 16 (the tiles); for
// BF16Inputs, the bf16 weights are packed in VDPBF16PS panels where the
// CPU has the instruction, with the same products.
func TestPackLinearBF16(t *testing.T) {
	b := New()
	r := rand.New(rand.NewPCG(3, 4))
	const in = 40
	outs := []int{24, 8, 8}
	rnd := func(n int, exact bool) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
			if exact {
				x[i] = backend.RoundBF16(x[i])
			}
		}
		return x
	}
	for _, tc := range []struct {
		name      string
		exact, bf bool // values bf16-exact; weights as bf16 buffers
		wantBF16  bool
		bf16In    bool // BF16Inputs
	}{{"float32", false, false, false, false}, {"exact float32", true, false, true, false}, {"bf16", true, true, true, false}, {"bf16 inputs", true, true, true, true}} {
		var ws, ws32 []backend.Buffer
		for _, o := range outs {
			w := rnd(o*in, tc.exact)
			ws32 = append(ws32, Host(w))
			if tc.bf {
				h, _ := b.AllocBF16(len(w))
				b.ToBF16(h, Host(w), len(w))
				ws = append(ws, h)
			} else {
				ws = append(ws, Host(w))
			}
		}
		p, err := b.PackLinear([]backend.LinearGroup{{Weights: ws, Outs: outs, In: in, BF16Inputs: tc.bf16In}})
		if err != nil {
			t.Fatal(err)
		}
		if got := p[0].(*packed).p.BF16(); got != tc.wantBF16 {
			t.Fatalf("%s: bf16 panels %v, want %v", tc.name, got, tc.wantBF16)
		}
		if got, want := p[0].(*packed).p.DP(), tc.bf16In && gemm.HasDP(); got != want {
			t.Fatalf("%s: VDPBF16PS panels %v, want %v", tc.name, got, want)
		}
		for _, N := range []int{2, 16} {
			x := Host(rnd(N*in, tc.bf))
			inputs := []backend.Buffer{x}
			if tc.bf {
				x16, _ := b.AllocBF16(len(x))
				b.ToBF16(x16, x, len(x))
				inputs = append(inputs, x16)
			}
			want := make([]float32, N*40)
			off := 0
			for i, w := range ws32 {
				b.Gemm(false, true, N, outs[i], in, 1, x, in, w, in, 0, Host(want[off:]), 40)
				off += outs[i]
			}
			for _, xin := range inputs {
				got := make([]float32, N*40)
				b.PackedLinear(Host(got), xin, p[0], N)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s, %d rows, x %T: out[%d] = %v, Gemm on float32 weights %v", tc.name, N, xin, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestPackLinearReusesFreedPanels: the panels of freed packed weights are
// packed into again (same sizes) and give the products of the new
// weights; what the next PackLinear does not take is dropped.
func TestPackLinearReusesFreedPanels(t *testing.T) {
	b := New()
	r := rand.New(rand.NewPCG(5, 6))
	group := func(exact bool) []backend.LinearGroup {
		w := make([]float32, 48*40)
		for i := range w {
			w[i] = float32(r.NormFloat64())
			if exact {
				w[i] = backend.RoundBF16(w[i])
			}
		}
		return []backend.LinearGroup{{Weights: []backend.Buffer{Host(w)}, Outs: []int{48}, In: 40}}
	}
	for _, exact := range []bool{false, true} {
		first, _ := b.PackLinear(group(exact))
		d, d16 := first[0].(*packed).p.Panels()
		b.Free(first[0])
		g := group(exact)
		second, _ := b.PackLinear(g)
		e, e16 := second[0].(*packed).p.Panels()
		if exact && &e16[0] != &d16[0] || !exact && &e[0] != &d[0] {
			t.Fatalf("exact %v: the freed panels were not reused", exact)
		}
		x := Host(make([]float32, 16*40))
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		got, want := make([]float32, 16*48), make([]float32, 16*48)
		b.PackedLinear(Host(got), x, second[0], 16)
		b.Gemm(false, true, 16, 48, 40, 1, x, 40, g[0].Weights[0], 40, 0, Host(want), 48)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("exact %v: out[%d] = %v, want %v", exact, i, got[i], want[i])
			}
		}
		b.Free(second[0])
		b.PackLinear(nil)
		if recycled.f32 != nil || recycled.bf16 != nil {
			t.Fatal("PackLinear kept the panels it did not take")
		}
	}
}

// TestToBF16MatchesRoundBF16: ToBF16 (roundBF16AVX2 for runs of 16, where
// there is one) gives the bits of backend.RoundBF16 for every top half
// with the low halves that decide the rounding (zero, just below, at and
// just above the tie, all ones: ties to even both ways, carries into the
// exponent and to Inf, subnormals, NaNs whose payload is only in the low
// half), in a buffer whose length leaves a scalar tail.
func TestToBF16MatchesRoundBF16(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX2 on this machine: ToBF16 is the scalar loop")
	}
	lows := []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff}
	src := make([]float32, 0, 1<<16*len(lows)+5)
	for hi := uint32(0); hi < 1<<16; hi++ {
		for _, lo := range lows {
			src = append(src, math.Float32frombits(hi<<16|lo))
		}
	}
	src = append(src, 1, 2, 3, 4, 5)
	b := New()
	dst, _ := b.AllocBF16(len(src))
	b.ToBF16(dst, Host(src), len(src))
	for i, f := range src {
		want := uint16(math.Float32bits(backend.RoundBF16(f)) >> 16)
		if got := dst.(HostBF16)[i]; got != want {
			t.Fatalf("ToBF16(%#08x) = %#04x, want %#04x (RoundBF16)", math.Float32bits(f), got, want)
		}
	}
}
