package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// benchShapes are the (M, N, K) of research/perf.md section 1, plus the
// per-head attention products. Layout "NN" is C = A·B (forward X·W), "NT"
// C = A·Bᵀ (dX = dY·Wᵀ), "TN" C = Aᵀ·B (dW = Xᵀ·dY).
var benchShapes = [][3]int{
	{512, 128, 128}, {512, 512, 128}, {512, 128, 512}, {4096, 256, 256},
	{256, 8192, 256}, {1024, 1024, 1024}, {256, 256, 32}, {256, 32, 256}, {64, 64, 64},
}

func benchGemm(b *testing.B, f func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)) {
	for _, layout := range []string{"NN", "NT", "TN"} {
		for _, s := range benchShapes {
			m, n, k := s[0], s[1], s[2]
			b.Run(fmt.Sprintf("%s/%dx%dx%d", layout, m, n, k), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 1))
				transA, transB := layout == "TN", layout == "NT"
				g := newCase(r, transA, transB, m, n, k, 1, 0, 0)
				flop := 2 * float64(m) * float64(n) * float64(k)
				best := time.Duration(math.MaxInt64)
				for b.Loop() {
					start := time.Now()
					f(transA, transB, m, n, k, 1, g.a, g.lda, g.b, g.ldb, 0, g.c, g.ldc)
					best = min(best, time.Since(start))
				}
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flop/best.Seconds()/1e9, "best-GFLOP/s")
			})
		}
	}
}

// BenchmarkSgemm measures GFLOP/s = 2·M·N·K / time, as the mean over the
// run and as the best single product (best-GFLOP/s): on a shared machine the
// best one is the one nobody else's process interrupted. Run with -cpu 1,2
// to compare one and two cores.
func BenchmarkSgemm(b *testing.B) { benchGemm(b, Sgemm) }

// BenchmarkSgemmSerial is the same on one goroutine.
func BenchmarkSgemmSerial(b *testing.B) { benchGemm(b, SgemmSerial) }

// BenchmarkSgemmPortable is the portable Go micro-kernel, for comparison.
func BenchmarkSgemmPortable(b *testing.B) {
	saved := useAsm
	useAsm = false
	defer func() { useAsm = saved }()
	benchGemm(b, SgemmSerial)
}

// BenchmarkKernel is the micro-kernel alone on L1-resident panels (kc =
// kcMax): the ceiling the blocked product approaches.
func BenchmarkKernel(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	a, bp, c := randMatrix(r, mr*kcMax), randMatrix(r, nr*kcMax), make([]float32, mr*nr)
	for b.Loop() {
		kernel(kcMax, a, bp, c, nr, 1, 1)
	}
	b.ReportMetric(2*mr*nr*kcMax*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkKernelWide is the AVX-512 kernel of a tile two panels wide alone
// on L1-resident panels (kc = kcMax).
func BenchmarkKernelWide(b *testing.B) {
	if !useAsm || !useWide {
		b.Skip("no AVX-512 on this machine")
	}
	r := rand.New(rand.NewPCG(1, 1))
	a, bp, c := randMatrix(r, mr*kcMax), randMatrix(r, 2*nr*kcMax), make([]float32, 2*mr*nr)
	for b.Loop() {
		kernelWide(kcMax, a, bp, c, 2*nr, 1, 1)
	}
	b.ReportMetric(4*mr*nr*kcMax*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// decodeShapes are the products of one decoding step of 16 sequences of
// Qwen2.5-0.5B (hidden 896, q|k|v 1152, MLP 4864, vocabulary 151936) with
// weights packed once: q|k|v, o, gate|up, down, the LM head.
var decodeShapes = [][3]int{{16, 1152, 896}, {16, 896, 896}, {16, 9728, 896}, {16, 896, 4864}, {16, 151936, 896}}

// BenchmarkPackedDecode measures SgemmPacked on decodeShapes with float32
// and bf16 panels (the same values): GFLOP/s, and the GB/s of panels it
// streams (best single product). The weights of the large shapes do not
// fit the caches, so it is the decoder's case of products that read each
// weight once per step. The -stored kinds multiply by the stored bf16
// weights instead, packing panel by panel as the product runs
// (SgemmBF16B, and SgemmBF16 for dp: a frozen model's decoder, decision
// 59); their GB/s are of the stored weights.
func BenchmarkPackedDecode(b *testing.B) {
	for _, kind := range []string{"f32", "bf16", "dp", "bf16-stored", "dp-stored"} {
		if strings.HasPrefix(kind, "dp") && !HasDP() {
			continue
		}
		half := kind != "f32"
		for _, s := range decodeShapes {
			m, n, k := s[0], s[1], s[2]
			name := kind
			b.Run(fmt.Sprintf("%s/%dx%dx%d", name, m, n, k), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 1))
				g := newCase(r, false, true, m, n, k, 1, 0, 0)
				_, g.b = toBF16(g.b)
				b16, _ := toBF16(g.b)
				var p *PackedB
				bytes := 4.0
				switch {
				case strings.HasSuffix(kind, "-stored"):
					bytes = 2
				case half:
					p, bytes = PackBNarrow(nil, true, k, n, g.b, g.ldb), 2
				default:
					p = PackB(true, k, n, g.b, g.ldb)
				}
				var a16 []uint16
				if strings.HasPrefix(kind, "dp") {
					// A decoding step at BF16 precision: bf16 rows by DP
					// panels (SgemmPackedBF16) or stored rows.
					a16, _ = toBF16(g.a)
					if kind == "dp" {
						p = PackBDP(nil, true, k, n, b16, g.ldb)
					}
				}
				flop := 2 * float64(m) * float64(n) * float64(k)
				best := time.Duration(math.MaxInt64)
				for b.Loop() {
					start := time.Now()
					switch {
					case kind == "bf16-stored":
						SgemmBF16B(false, true, m, n, k, 1, g.a, g.lda, b16, g.ldb, 0, g.c, g.ldc)
					case kind == "dp-stored":
						SgemmBF16(false, true, m, n, k, 1, a16, g.lda, b16, g.ldb, 0, g.c, g.ldc)
					case a16 != nil:
						SgemmPackedBF16(m, 1, a16, g.lda, p, 0, g.c, g.ldc)
					default:
						SgemmPacked(m, 1, g.a, g.lda, p, 0, g.c, g.ldc)
					}
					best = min(best, time.Since(start))
				}
				b.ReportMetric(flop/best.Seconds()/1e9, "best-GFLOP/s")
				b.ReportMetric(bytes*float64(n*k)/best.Seconds()/1e9, "best-GB/s")
			})
		}
	}
}

// BenchmarkPackWeights measures packing a decoder's weights once (PackB,
// and PackBNarrow to bf16 panels) on the gate|up and LM head shapes of
// decodeShapes, in GB/s of stored float32 weights.
func BenchmarkPackWeights(b *testing.B) {
	for _, half := range []bool{false, true} {
		for _, s := range [][2]int{{9728, 896}, {151936, 896}} {
			n, k := s[0], s[1]
			name := "f32"
			if half {
				name = "bf16"
			}
			b.Run(fmt.Sprintf("%s/%dx%d", name, n, k), func(b *testing.B) {
				_, w := toBF16(randMatrix(rand.New(rand.NewPCG(1, 1)), n*k))
				for b.Loop() {
					if half {
						PackBNarrow(nil, true, k, n, w, k)
					} else {
						PackB(true, k, n, w, k)
					}
				}
				b.ReportMetric(4*float64(n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

// BenchmarkKernelRows compares the in-place kernels (6 rows, the widest
// this machine has) on float32 and bf16 panels resident in L1 (kc =
// kcMax): the cost of widening B in registers when nothing waits on
// memory, as in a prefill's products of many rows.
func BenchmarkKernelRows(b *testing.B) {
	if !useAsm {
		b.Skip("no assembly kernel")
	}
	span := nr
	if useWide {
		span = 2 * nr
	}
	r := rand.New(rand.NewPCG(1, 1))
	a, c := randMatrix(r, mr*kcMax), make([]float32, mr*span)
	b16, bp := toBF16(randMatrix(r, span*kcMax))
	flop := 2 * mr * float64(span) * kcMax
	b.Run("f32", func(b *testing.B) {
		for b.Loop() {
			if useWide {
				kernelRowsWide(mr, kcMax, a, kcMax, bp, c, span, 1, 1, false)
			} else {
				kernelRows(mr, kcMax, a, kcMax, bp, c, span, 1, 1, false)
			}
		}
		b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("bf16", func(b *testing.B) {
		for b.Loop() {
			if useWide {
				kernelRowsWideBF16(mr, kcMax, a, kcMax, b16, c, span, 1, 1, false)
			} else {
				kernelRowsBF16(mr, kcMax, a, kcMax, b16, c, span, 1, 1, false)
			}
		}
		b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

// BenchmarkSgemmBF16 is BenchmarkSgemm's first shapes with bf16 operands
// (SgemmBF16, the CPU's GemmBF16 at precision bf16), next to Sgemm on the
// widened values: the cost of widening as the operands are packed; and
// with only B bf16 (SgemmBF16B, a float32 product by frozen bf16 weights).
func BenchmarkSgemmBF16(b *testing.B) {
	for _, layout := range []string{"NN", "NT", "TN"} {
		for _, s := range benchShapes[:4] {
			m, n, k := s[0], s[1], s[2]
			transA, transB := layout == "TN", layout == "NT"
			g := newCase(rand.New(rand.NewPCG(1, 1)), transA, transB, m, n, k, 1, 0, 0)
			a16, aw := toBF16(g.a)
			b16, bw := toBF16(g.b)
			flop := 2 * float64(m) * float64(n) * float64(k)
			// f32: both operands float32; bf16: both bf16; bf16b: a
			// float32 A by a bf16 B (SgemmBF16B, frozen bf16 weights).
			for _, kind := range []string{"f32", "bf16", "bf16b"} {
				name := fmt.Sprintf("%s/%dx%dx%d/%s", layout, m, n, k, kind)
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						switch kind {
						case "bf16":
							SgemmBF16(transA, transB, m, n, k, 1, a16, g.lda, b16, g.ldb, 0, g.c, g.ldc)
						case "bf16b":
							SgemmBF16B(transA, transB, m, n, k, 1, aw, g.lda, b16, g.ldb, 0, g.c, g.ldc)
						default:
							Sgemm(transA, transB, m, n, k, 1, aw, g.lda, bw, g.ldb, 0, g.c, g.ldc)
						}
					}
					b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkWiden is widen on the A of BenchmarkSgemmBF16's largest shape
// (4096×256): the pass SgemmBF16 makes over A before its product.
func BenchmarkWiden(b *testing.B) {
	src := make([]uint16, 4096*256)
	for i := range src {
		src[i] = uint16(i)
	}
	dst := make([]float32, len(src))
	for _, asm := range []bool{true, false} {
		name := "asm"
		if !asm {
			name = "go"
		}
		b.Run(name, func(b *testing.B) {
			saved := useAsm
			useAsm = useAsm && asm
			defer func() { useAsm = saved }()
			for b.Loop() {
				widen(dst, src)
			}
			b.ReportMetric(float64(len(src)*b.N)/b.Elapsed().Seconds()/1e9, "Gvalues/s")
		})
	}
}

// BenchmarkStoredDecodeStep runs the products of one decoding step of 16
// rows through all 24 layers of Qwen2.5-0.5B (decodeShapes but the LM
// head, each layer its own stored bf16 weights: 716 MB, which no cache
// holds) as a frozen model's decoder multiplies by its stored weights,
// packing them panel by panel: float32 rows (f32, SgemmBF16B) and bf16
// rows (dp, SgemmBF16). It reports the best step in ms.
func BenchmarkStoredDecodeStep(b *testing.B) {
	const layers, m = 24, 16
	shapes := decodeShapes[:4]
	r := rand.New(rand.NewPCG(1, 1))
	w := make([][][]uint16, layers)
	for l := range w {
		for _, s := range shapes {
			w16, _ := toBF16(randMatrix(r, s[1]*s[2]))
			w[l] = append(w[l], w16)
		}
	}
	a := randMatrix(r, m*4864)
	a16, _ := toBF16(a)
	c := make([]float32, m*9728)
	for _, kind := range []string{"f32", "dp"} {
		if kind == "dp" && !HasDP() {
			continue
		}
		b.Run(kind, func(b *testing.B) {
			best := time.Duration(math.MaxInt64)
			for b.Loop() {
				start := time.Now()
				for l := range w {
					for i, s := range shapes {
						n, k := s[1], s[2]
						if kind == "dp" {
							SgemmBF16(false, true, m, n, k, 1, a16, k, w[l][i], k, 0, c, n)
						} else {
							SgemmBF16B(false, true, m, n, k, 1, a, k, w[l][i], k, 0, c, n)
						}
					}
				}
				best = min(best, time.Since(start))
			}
			b.ReportMetric(best.Seconds()*1e3, "best-ms")
		})
	}
}
