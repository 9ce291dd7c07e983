package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu"
	"github.com/ragen-go/ragen/engine/sample"
)

// noPacker is the CPU backend but not a Packer: a decoder multiplies by
// the float32 weights themselves with Gemm.
type noPacker struct{ backend.Backend }

func (n noPacker) Wrap(x []float32) backend.Buffer { return n.Backend.(backend.HostMemory).Wrap(x) }

// decodeSequences is the decode tests' batch: five sequences (ids 0–4)
// whose first chunks are random tokens of 5, 8, ... 17, each with its own
// sampling RNG.
func decodeSequences(rng *rand.Rand, V int) (ids []int, chunks [][]int, rngs []*sample.RNG) {
	ids = []int{0, 1, 2, 3, 4}
	chunks = make([][]int, len(ids))
	for i := range chunks {
		chunks[i] = randomBatch(rng, V, 5+3*i)
	}
	rngs = make([]*sample.RNG, len(ids))
	for i := range rngs {
		rngs[i] = sample.NewRNG(uint64(100 + i))
	}
	return ids, chunks, rngs
}

// bf16Model is a model of the given config whose every parameter is a
// bf16 value held in float32, as Load makes one from bf16 safetensors.
func bf16Model(t *testing.T, c Config, seed uint64) *Model {
	t.Helper()
	m, err := New(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, seed+1)
	for i, v := range m.Params.Data {
		m.Params.Data[i] = backend.RoundBF16(v)
	}
	return m
}

// decodeTrace runs a multi-turn decode on m — a prefill, sampled steps
// (at most three live sequences at the end, the product path of few
// rows), an environment chunk, more steps — and returns every step's
// logits and the sampled tokens.
func decodeTrace(t *testing.T, m *Model) (logits []float32, tokens []int) {
	t.Helper()
	d, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(41, 42))
	V := m.Config.VocabSize
	ids, chunks, rngs := decodeSequences(rng, V)
	var smp sample.Sampler
	for step := 0; step < 12; step++ {
		out, err := d.Append(ids, chunks)
		if err != nil {
			t.Fatal(err)
		}
		logits = append(logits, out...)
		for i := range ids {
			tok := smp.Sample(out[i*V:(i+1)*V], sample.Options{Temperature: 1}, rngs[i])
			tokens = append(tokens, tok)
			chunks[i] = []int{tok}
		}
		switch step {
		case 4: // an environment reply to two sequences
			chunks[1] = append(chunks[1], randomBatch(rng, V, 9)...)
			chunks[3] = append(chunks[3], randomBatch(rng, V, 4)...)
		case 6: // two episodes end: three rows per step from here on
			d.Remove(ids[0])
			d.Remove(ids[4])
			ids, chunks, rngs = ids[1:4], chunks[1:4], rngs[1:4]
		}
	}
	return logits, tokens
}

// TestDecoderBF16StorageBitEqual: a decoder that keeps a bf16-exact
// model's weights as bf16 panels (half the bytes) computes the very
// floats of one that multiplies the float32 weights: every logit of a
// multi-turn decode, and so every sampled token, bit for bit. Also for
// a LoRA policy (the frozen base's bf16 panels, kept by the base, with
// the adapters' products beside them) and at BF16 precision, where the
// model's bf16 copy is two bytes a value.
func TestDecoderBF16StorageBitEqual(t *testing.T) {
	c := Tiny()
	c.HiddenSize, c.IntermediateSize, c.VocabSize = 64, 176, 200
	for _, tc := range []struct {
		name      string
		lora      bool
		precision backend.Precision
	}{{"f32", false, backend.F32}, {"lora", true, backend.F32}, {"bf16", false, backend.BF16}} {
		t.Run(tc.name, func(t *testing.T) {
			traces := make([][]float32, 2)
			toks := make([][]int, 2)
			for i, b := range []backend.Backend{cpu.New(), noPacker{cpu.New()}} {
				m := bf16Model(t, c, 31)
				if err := m.Use(b, tc.precision); err != nil {
					t.Fatal(err)
				}
				if tc.lora {
					a, err := m.WithLoRA(LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj", "gate_proj", "down_proj"}}, false, 5)
					if err != nil {
						t.Fatal(err)
					}
					for _, v := range a.Layout.Views { // B ≠ 0: the adapters change the products
						x := a.Params.Slice(v.Name)
						for j := range x {
							x[j] = float32(0.05 * math.Sin(float64(j+v.Offset)))
						}
					}
					if err := a.Upload(); err != nil {
						t.Fatal(err)
					}
					m = a
				}
				traces[i], toks[i] = decodeTrace(t, m)
			}
			if len(traces[0]) != len(traces[1]) {
				t.Fatalf("%d logits (bf16 panels), %d (float32 weights)", len(traces[0]), len(traces[1]))
			}
			for j := range traces[0] {
				if math.Float32bits(traces[0][j]) != math.Float32bits(traces[1][j]) {
					t.Fatalf("logit %d: %v from bf16 panels, %v from the float32 weights", j, traces[0][j], traces[1][j])
				}
			}
			if !slices.Equal(toks[0], toks[1]) {
				t.Fatalf("tokens %v (bf16 panels), %v (float32 weights)", toks[0], toks[1])
			}
		})
	}
}

// paramSource gives a model's parameters as a bf16 checkpoint would
// (WeightSource): every view in bf16 (the values must be bf16s).
type paramSource struct{ m *Model }

func (paramSource) BF16(View) bool { return true }

func (s paramSource) Read(v View, dst []float32) error {
	copy(dst, s.m.Params.Slice(v.Name))
	return nil
}

func (s paramSource) ReadBF16(v View, dst []uint16) error {
	for i, x := range s.m.Params.Slice(v.Name) {
		dst[i] = uint16(math.Float32bits(x) >> 16)
	}
	return nil
}

// TestFrozenDecoderReadsStoredWeights: a frozen model decoding by itself
// (NewFrozen, as a bf16 checkpoint loads) multiplies by its stored bf16
// matrices, no packed copy kept (decision 59), and computes the very
// logits, and so tokens, of the float32 model's decoder with its packed
// panels, at F32 and BF16, tied head or not: a prefill, steps of 5 and
// 18 rows (packed panel by panel, the down projection in 3 k blocks) and
// of 3 (dot products of the stored rows).
func TestFrozenDecoderReadsStoredWeights(t *testing.T) {
	for _, tied := range []bool{false, true} {
		for _, p := range []backend.Precision{backend.F32, backend.BF16} {
			c := Tiny()
			c.HiddenSize, c.IntermediateSize, c.VocabSize = 64, 600, 200 // down: 3 k blocks
			c.TieWordEmbeddings = tied
			full := bf16Model(t, c, 31)
			frozen, err := NewFrozen(c, paramSource{full})
			if err != nil {
				t.Fatal(err)
			}
			if frozen.w16 == nil {
				t.Fatal("NewFrozen kept float32 matrices for a model of bf16s")
			}
			for _, m := range []*Model{full, frozen} {
				if err := m.Use(m.Backend(), p); err != nil {
					t.Fatal(err)
				}
			}
			d, err := frozen.NewDecoder()
			if err != nil {
				t.Fatal(err)
			}
			prods := []product{d.prod.lmHead}
			for _, l := range d.prod.layers {
				prods = append(prods, l.qkv, l.o, l.gateUp, l.down)
			}
			for _, x := range prods {
				if x.packed != nil {
					t.Fatalf("tied %v, %s: the frozen model's decoder packed a copy of its weights", tied, p)
				}
			}
			d.Close()
			want, wantToks := decodeTrace(t, full)
			got, gotToks := decodeTrace(t, frozen)
			if len(want) != len(got) {
				t.Fatalf("tied %v, %s: %d logits from the frozen model, %d from the float32 one", tied, p, len(got), len(want))
			}
			for j := range want {
				if math.Float32bits(want[j]) != math.Float32bits(got[j]) {
					t.Fatalf("tied %v, %s: logit %d is %v from the frozen model's stored weights, %v from the packed float32 ones", tied, p, j, got[j], want[j])
				}
			}
			if !slices.Equal(wantToks, gotToks) {
				t.Fatalf("tied %v, %s: tokens %v (frozen), %v (float32)", tied, p, gotToks, wantToks)
			}
		}
	}
}
