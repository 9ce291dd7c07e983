// Package gemm is the one place through which every float32 matrix product
// of the CPU backend goes.
//
// Matrices are row-major with a leading dimension (the stride between rows),
// as in BLAS: element (i, j) of a matrix X with leading dimension ldx is
// X[i*ldx+j]. op(X) is X or its transpose, so the three layouts a
// transformer needs — A·B, A·Bᵀ, Aᵀ·B — need no transposing copies.
//
// # How a product is computed
//
// The loop nest is the one of BLIS (Goto's algorithm). C is cut into column
// blocks of ncMax, k into blocks of at most kcMax, rows into blocks of
// mcMax. For each (column block, k block) the kc×nc block of op(B) is packed
// into panels of nr = 16 columns; for each row block the mc×kc block of
// op(A) is packed into panels of mr = 6 rows (pack.go). Packing is where the
// transposes happen: the packers read the stored matrix with whichever
// stride op() implies, so all four layouts feed the same kernel. Panels at
// the edges are padded with zeros; a tile that sticks out of C is computed
// into a scratch tile and its inside part merged back.
//
// When A is not transposed (A·B and A·Bᵀ, the forward pass and dX) the
// assembly path does not pack A at all, nor mostly when it is (below): a second kernel (kernelAVX2Rows)
// broadcasts straight from the 6 stored rows, and kernels of 1–5 rows take
// the rows left at the bottom. Packing A costs about one copy per element
// of A, which is as much as the arithmetic when n is small (n = 32 for
// attention's A·V: packing took 54% of the time there), and when m is (a
// decoding step's 16 rows: packing the last 4 and computing 6 rows for
// them took a quarter of the product). In row blocks of at most streamRows
// rows — products whose B panels each arrive from memory for a few tiles —
// the in-place kernels also prefetch the next B panel (the Pf variants),
// and with AVX-512 take tiles of up to mrTall = 12 rows, as even as the
// rows allow (16 rows as 8 + 8; decision 60), where C's merge is a copy
// or an addition (beta 0 or 1) and the rows do not crowd one L1 set.
// Such a product by a B not packed beforehand (a decoding step on weights
// read where they are stored, decision 59) packs B one panel at a time,
// multiplying it while it is in L1, and the packing prefetches the
// weights it packs next (problem.panelByPanel, prefetchAt). None of this
// changes a bit: every element of C sums over the same k blocks in the
// same order whatever the blocking of rows and columns.
// Packing a transposed B (A·Bᵀ) goes through 8×8 register transposes
// (packTrans8, generated with the kernels) instead of a scalar scatter. A
// transposed A (Aᵀ·B: weight gradients, attention's dK and dV) is read in
// place by the Cols kernels, whose k step's values for a tile's 6 rows are
// consecutive (decision 61), a bf16 one as its widened blocks, unless its
// stored rows are a multiple of 4 KiB apart; packCols6 packs those.
//
// A·Bᵀ with at most DotMaxRows rows — a decoding step, x·Wᵀ for one to three
// sequences — packs nothing: dot4 takes dot products of the stored rows,
// four rows of W at a time (3× faster than packing W for one row).
//
// Dots and Combine are the one-row products on their own, for a decoding
// step's attention against the cached keys and values (rows of one head, 32
// or 64 floats): Dots (q·kᵀ) loops over groups of eight rows of B in the
// assembly dot8 and reduces each group in one tree, with none of Sgemm's
// bookkeeping (it made a decoding step 20% faster than the dot4 path);
// Combine (p·v) keeps a row of 32 or 64 outputs in registers (comb32,
// comb64) while it streams the rows of B once, in order. Both prefetch
// ahead of the rows they read: the caches stream from memory.
//
// PackB packs op(B) once for many products (SgemmPacked): a decoder packs
// each weight matrix when it is created, since at 16 rows packing a weight
// at every step cost as much as the product. SgemmPacked gives the same
// bits as Sgemm on the same operands, and splits over the pool from a lower
// size (packedParMinFlops), into smaller chunks (packedChunkFlops), since
// its chunks pack nothing.
//
// # bfloat16 operands
//
// A bf16 value is the top half of a float32, so widening it is exact.
// PackBBF16 and PackBNarrow keep a PackedB's panels in bf16 — half the
// bytes a decoding step streams from memory — and the in-place kernels'
// bf16 twins (kernelAVX2BF16Rows…, kernelAVX512BF16Rows…) widen each B
// vector in registers (VPMOVZXWD, VPSLLD 16) before the same FMAs; dot4BF16
// does the same for the few-row path, and where A is packed the panels are
// widened into the workspace first (and for more than streamRows rows,
// where a block serves many tiles). SgemmBF16 (bf16 A and B, the CPU's
// GemmBF16) widens A a block at a time as the product reaches it (widenA)
// and B as it packs it (packBWiden), with the generated packRowBF16. Each
// gives the bits of the float32 product of the widened values
// (bf16_test.go), so bf16 storage changes memory and speed, never the
// numbers (decision 44).
//
// When A is bf16 too (SgemmBF16, SgemmPackedBF16: a model at BF16
// precision) and the CPU has AVX-512 BF16, the product runs on
// VDPBF16PS (dp.go, decision 53): each instruction adds two products of
// bf16 pairs to 16 float32 sums, each product rounded in as an FMA would,
// the pair's high half first. Packed so that the high half is the earlier
// k step — B into DP panels of 32 columns (packTrans8DP, packPairsDP), A's
// blocks with each pair's halves swapped (swapPairs) — it is the chain of
// FMAs over k in order, so it gives the same bits as the widening path at
// twice the products per instruction and with nothing to widen
// (TestDPMatchesWidened); the kernels (kernelDPRows…, 12×32 tiles whose 24
// sums take AVX-512's upper registers too, A in place) keep the k blocks
// and merges of the float32 ones. Subnormals are the one difference: the
// instruction flushes them. Measured on a 2-vCPU AMD Turin VM
// (BenchmarkSgemmBF16DP, best of 20): 570–750 GFLOP/s on the 0.5B model's
// shapes against 290–360 widening (6×32 tiles gave 520–670). Products of
// at most streamRows rows run the Pf twins (kernelDPRowsPf…), which
// prefetch the next panel as the float32 Pf kernels do: a decoding step's
// 16 rows by the 0.5B model's weights at 560–790 GFLOP/s
// (BenchmarkPackedDecode, dp rows), 430–650 without.
//
// The micro-kernel computes one 6×16 tile of C with the 12 sums held in
// 12 YMM registers for the whole k block: per k step it loads 16 values of
// B (two registers), broadcasts 6 values of A and issues 12 FMAs. Zen 3 has
// 2 FMA pipes of 4-cycle latency, so 12 independent chains keep both busy
// (8 would suffice) and the loads (8 per 12 FMAs) stay within its 3 load
// ports. It runs at 90–98 GFLOP/s per core on Zen 3 (boost clock), the FMA
// throughput limit.
//
// On a machine with AVX-512 the same plan runs on ZMM registers over two
// adjacent B panels at once: a 6×32 tile (kernelAVX512…, selected at start
// by golang.org/x/sys/cpu; macro pairs the panels, a lone last panel takes
// the 16-wide kernel). Each element of C is still one chain of FMAs over k
// in order, multiplied by alpha and merged with beta·C by the same
// instructions, so both widths give the same bits (TestWideKernelsMatchNarrow):
// a notebook reproduces its numbers on machines with and without AVX-512.
// On Sapphire Rapids (2 vCPUs) the 6×32 kernel alone runs at 160–183
// GFLOP/s per core against the 6×16 one's 110–118. Its Pf twins prefetch
// the next pair of panels into the L2 only (PREFETCHT2; decision 60): on
// the Zen 5 VM 16-row products by weights from memory (the toy presets'
// decoding shapes) ran 20–30% faster with them than without (10% with
// PREFETCHT0), and with the taller tiles the base preset's decoding took
// 14–16% less time. (On Sapphire Rapids, with the weights in its L3 and
// PREFETCHT0, a decoding step had been 9% slower with prefetches;
// PREFETCHT2 is measured on Zen 5 only.)
//
// # Tuning constants
//
//   - mr×nr = 6×16: the largest tile whose sums fit the 16 YMM registers with
//     room for the B row and the broadcasts.
//   - kcMax = 256: one B micro-panel (kc×16 floats = 16 KiB) stays in the
//     32 KiB L1 while the kernel sweeps the A block; a longer kc would also
//     amortise the tile's load/store of C over more FMAs, but would evict it.
//     k is split into equal blocks (k = 300 gives 2×150, not 256 + 44).
//   - mcMax = 168: the packed A block (168×256 floats = 168 KiB) stays in the
//     512 KiB L2 while every B micro-panel passes over it.
//   - ncMax = 4080: the packed B block (256×4080 floats = 4 MiB) stays in the
//     shared L3.
//   - parMinFlops, parChunkFlops, parMaxChunks: see below.
//
// # Parallelism and determinism
//
// Sgemm splits C into a grid of chunks chosen from the shape alone
// (partition): about one chunk per parChunkFlops of work, at most
// parMaxChunks, near-square, with row and column steps that are multiples of
// the tile. The chunks run on the persistent pool of package parallel. When
// there are several row chunks, all of op(B) is packed once before the loop
// and shared (read-only); otherwise each chunk packs its own columns of B.
// Every element of C is summed over the same k blocks in the same order,
// with the same FMAs whichever kernel variant computes its tile, whichever
// chunk or goroutine computes it, so Sgemm, SgemmSerial and any GOMAXPROCS
// give bit-identical results. Products under parMinFlops run serially:
// starting a parallel loop costs a few µs even with spinning workers, and
// much more when the other core's worker has parked.
//
// # Measured (Zen 3 2-vCPU VM shared with other builds; best-of GFLOP/s)
//
// BenchmarkSgemm with `-cpu 1` and `-cpu 2` run separately (a combined
// `-cpu 1,2` run mislabels some results), the best single product of
// ~0.5 s of repetitions over 2–4 runs, while the machine's load average was
// 4–11. Two cores rarely were both free for a whole large product, so the
// 2-core column is a lower bound for the big shapes and varies ±30%:
//
//	(M,N,K)          NN 1 core / 2   NT 1 / 2     TN 1 / 2     OpenBLAS 1 / 2
//	512,128,128      93 / 158        93 / 166     83 / 89      82 / 130
//	512,512,128      92 / 160        92 / 148     83 / 138     84 / 160
//	512,128,512      86 / 85         87 / 104     74 / 106     75 / 154
//	4096,256,256     79 / 91         81 / 81      80 / 94      84 / 124
//	256,8192,256     74 / 91         74 / 91      75 / 75      86 / 148
//	1024,1024,1024   71 / 70         71 / 72      74 / 36      88 / 182
//	256,256,32       79 / 87         79 / 120     76 / 89      60 / 82
//	256,32,256       90 / 102        93 / 167     62 / 83      74 / 61
//
// One core matches OpenBLAS (research/perf.md) on the transformer shapes and
// reaches 80–85% of it on the two largest; the micro-kernel alone
// (BenchmarkKernel) runs at 90–98 GFLOP/s. What is left on one core: on
// the large shapes, packing B (a cache and TLB miss per row when ldb is
// large, ~10% of the time for N = 8192) and the second k block's
// read-modify-write of C; for Aᵀ·B with small n, packing A (TN 256,32,256;
// measured before decision 61, which reads a transposed A in place).
// On two cores, the loss is the other core being busy or its worker being
// descheduled mid-chunk (the caller then waits for that chunk).
//
// Measured on Sapphire Rapids (2-vCPU KVM guest, AVX-512, quiet machine;
// BenchmarkSgemm, best single product, -cpu 1 and -cpu 2 run separately).
// `ragen bench` on the same machine put OpenBLAS (2 threads) at 190–320
// GFLOP/s on the first six shapes, ours at 0.92–1.6× of it:
//
//	(M,N,K)          NN 1 core / 2   NT 1 / 2     TN 1 / 2
//	512,128,128      166 / 284       162 / 284    142 / 252
//	512,512,128      152 / 282       154 / 320    134 / 250
//	512,128,512      160 / 309       159 / 291    127 / 236
//	4096,256,256     170 / 320       166 / 315    137 / 275
//	256,8192,256     143 / 288       141 / 295    139 / 283
//	1024,1024,1024   142 / 269       130 / 268    120 / 256
//	256,256,32       135 / 207       140 / 194    136 / 202
//	256,32,256       158 / 253       170 / 241    105 / 173
//
// Two changes made for it help everywhere: a non-transposed A that is
// packed (crowdedRows: lda = 1024 above) goes through 8×8 register
// transposes (packRows6) instead of a scalar scatter, which took 17% of
// the 1024³ product, and the shared prepack of B runs on the pool instead
// of keeping the other core waiting (5%).
//
// # Kernels
//
// kernel_amd64.s is generated by internal/asmgen with avo (`go generate`;
// a test in internal/asmgen fails when the checked-in files are stale); it
// needs AVX2 and FMA, and AVX-512F for the wide kernels, checked at
// start-up with golang.org/x/sys/cpu. Other
// machines and architectures use kernelGo, the same contract in scalar Go
// (2.5–4.5 GFLOP/s, 4–7× the naive loop). naive is the oracle the
// tests compare both against.
package gemm
