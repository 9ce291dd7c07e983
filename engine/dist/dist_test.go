package dist

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sync"
	"testing"
)

// The exact sum does not depend on the order of the parts nor on how
// they are spread over ranks, and it is the float64 sum to float32 accuracy.
func TestFixedSumIndependentOfOrderAndRanks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, parts = 257, 9
	xs := make([][]float32, parts)
	want := make([]float64, n)
	for p := range xs {
		xs[p] = make([]float32, n)
		for i := range xs[p] {
			v := float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-8)))
			xs[p][i] = v
			want[i] += float64(v)
		}
	}
	sum := func(order []int) []float32 {
		f := NewFixed(n)
		for _, p := range order {
			f.Add(xs[p])
		}
		out := make([]float32, n)
		f.Floats(out)
		return out
	}
	a := sum([]int{0, 1, 2, 3, 4, 5, 6, 7, 8})
	b := sum([]int{8, 3, 5, 0, 7, 1, 6, 2, 4})
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("element %d: %v in one order, %v in another", i, a[i], b[i])
		}
		if d := math.Abs(float64(a[i]) - want[i]); d > 1e-6*math.Abs(want[i])+1e-18 {
			t.Fatalf("element %d: %v, float64 sum %v", i, a[i], want[i])
		}
	}
	// Three ranks, parts dealt round-robin, summed by AllReduceInt64.
	comms := Local(3)
	got := make([][]float32, 3)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := NewFixed(n)
			for p := r; p < parts; p += 3 {
				f.Add(xs[p])
			}
			if err := c.AllReduceInt64(f.Limbs); err != nil {
				t.Error(err)
			}
			got[r] = make([]float32, n)
			f.Floats(got[r])
		}()
	}
	wg.Wait()
	for r := range got {
		for i := range a {
			if math.Float32bits(got[r][i]) != math.Float32bits(a[i]) {
				t.Fatalf("rank %d element %d: %v, one process %v", r, i, got[r][i], a[i])
			}
		}
	}
}

func TestFixedBadValues(t *testing.T) {
	f := NewFixed(2)
	f.Add([]float32{1, float32(math.Inf(1))})
	out := make([]float32, 2)
	f.Floats(out)
	if f.Bad() != 1 || !math.IsNaN(float64(out[0])) {
		t.Fatalf("bad %d, out %v; want 1 and NaN", f.Bad(), out)
	}
	f.Reset()
	f.Add([]float32{-3.5, 1e-30})
	f.Floats(out)
	if out[0] != -3.5 || out[1] != 0 {
		t.Fatalf("got %v, want [-3.5 0]", out)
	}
}

func TestLocalAllGather(t *testing.T) {
	comms := Local(3)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 3; round++ {
				all, err := c.AllGather([]byte{byte(r), byte(round)})
				if err != nil {
					t.Error(err)
					return
				}
				for q, b := range all {
					if len(b) != 2 || b[0] != byte(q) || b[1] != byte(round) {
						t.Errorf("rank %d round %d: from %d got %v", r, round, q, b)
					}
				}
				x := []float64{float64(r)}
				c.AllReduceFloat64(x)
				if x[0] != 3 {
					t.Errorf("sum %v, want 3", x[0])
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkFixedAdd(b *testing.B) {
	x := make([]float32, 1<<20)
	for i := range x {
		x[i] = float32(i%1000) * 1e-5
	}
	f := NewFixed(len(x))
	b.SetBytes(4 << 20)
	for b.Loop() {
		f.Add(x)
	}
}

// limbs is exact: the limbs put back together are round(v·2⁶⁴), checked
// against big-float arithmetic for values across the whole range.
func TestLimbsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 100000; n++ {
		v := math.Float32frombits(rng.Uint32())
		hi, mid, lo, ok := limbs(v)
		if a := math.Abs(float64(v)); !(a < 1<<31) {
			if ok {
				t.Fatalf("%v: accepted", v)
			}
			continue
		}
		want := new(big.Float).SetPrec(200).SetFloat64(float64(v))
		want.SetMantExp(want, 64)
		wi, _ := new(big.Float).SetPrec(200).Add(want, big.NewFloat(math.Copysign(0.5, float64(v)))).Int(nil) // half away from zero, then truncate
		got := new(big.Int).Lsh(big.NewInt(hi), 64)
		got.Add(got, new(big.Int).Lsh(big.NewInt(mid), 32))
		got.Add(got, big.NewInt(lo))
		if !ok || got.Cmp(wi) != 0 {
			t.Fatalf("%v (%#x): limbs %d %d %d = %v, want %v", v, math.Float32bits(v), hi, mid, lo, got, wi)
		}
	}
}
