package gemm

import "fmt"

// Dots sets out[r] = Σ_{p<k} a[p]·b[r·ldb+p] for r < len(out): one row of
// A against len(out) stored rows of B, ldb floats apart — the product
// C = A·Bᵀ with one row, as SgemmSerial(false, true, 1, len(out), k, 1, a,
// k, b, ldb, 0, out, len(out)) computes it up to rounding. It serves the
// matrix–vector products of a decoding step's attention (q·kᵀ against the
// cached keys, p·v against the transposed values), whose rows are as short
// as a head (32 floats): there Sgemm's bookkeeping, and a reduction per four
// outputs, cost more than the arithmetic. Groups of eight rows go to the
// assembly dot8 over the first k/8·8 steps, which reduces eight rows in one
// tree; the remaining steps and rows are summed in order. The summation
// order depends on k and the row's place only, so results are the same
// whatever the caller's batch. Runs on the calling goroutine.
func Dots(out, a, b []float32, k, ldb int) {
	n := len(out)
	if k < 0 {
		panic(fmt.Sprintf("gemm: Dots: negative k = %d", k))
	}
	if len(a) < k {
		panic(fmt.Sprintf("gemm: Dots: len(a) = %d < k = %d", len(a), k))
	}
	checkMatrix("b", len(b), n, k, ldb)
	k8 := k / 8 * 8
	r := 0
	if useAsm && k8 > 0 && n >= 8 {
		r = n / 8 * 8
		dotRows8(n/8, k8, a, b, ldb, out)
		for i := 0; i < r && k8 < k; i++ {
			row := b[i*ldb : i*ldb+k]
			s := out[i]
			for p := k8; p < k; p++ {
				s += a[p] * row[p]
			}
			out[i] = s
		}
	}
	for ; r < n; r++ {
		row := b[r*ldb : r*ldb+k]
		var s float32
		for p, x := range a[:k] {
			s += x * row[p]
		}
		out[r] = s
	}
}

// Combine sets out[c] = Σ_{p<k} w[p]·b[p·ldb+c] for c < len(out): one row
// times a matrix of k stored rows, ldb floats apart — the product C = A·B
// with one row, as SgemmSerial(false, false, 1, len(out), k, 1, w, k, b,
// ldb, 0, out, len(out)) computes it up to rounding. It serves a decoding
// step's p·v against the cached values (W positions of a head's channels):
// the assembly keeps 64 or 32 outputs in registers while it streams the
// rows of B once, in order, where Sgemm would pack them first. Columns past
// the last block of 32 are summed in Go. Each output is summed in an order
// that depends on k and its column only. Runs on the calling goroutine.
func Combine(out, w, b []float32, k, ldb int) {
	n := len(out)
	if k < 0 {
		panic(fmt.Sprintf("gemm: Combine: negative k = %d", k))
	}
	if len(w) < k {
		panic(fmt.Sprintf("gemm: Combine: len(w) = %d < k = %d", len(w), k))
	}
	checkMatrix("b", len(b), k, n, ldb)
	c := 0
	if useAsm && k > 0 {
		for ; c+64 <= n; c += 64 {
			combRows(64, k, w, b[c:], ldb, out[c:])
		}
		if c+32 <= n {
			combRows(32, k, w, b[c:], ldb, out[c:])
			c += 32
		}
	}
	if c == n {
		return
	}
	rest := out[c:]
	clear(rest)
	for p, x := range w[:k] {
		for j, y := range b[p*ldb+c : p*ldb+n] {
			rest[j] += x * y
		}
	}
}
