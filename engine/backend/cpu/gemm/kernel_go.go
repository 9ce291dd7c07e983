package gemm

// kernelGo is the portable micro-kernel: the same contract as the assembly
// one (one mr×nr tile from packed panels, C = alpha·acc + beta·C, C unread
// when beta == 0), in scalar Go. It walks the tile in 2×4 sub-tiles so the
// eight sums stay in registers (the Go compiler does not vectorise, and
// amd64 has 15 usable float registers).
func kernelGo(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	a = a[:mr*kc]
	b = b[:nr*kc]
	for i := 0; i < mr; i += 2 {
		for j := 0; j < nr; j += 4 {
			var c00, c01, c02, c03, c10, c11, c12, c13 float32
			for p := 0; p < kc; p++ {
				ap := a[p*mr+i : p*mr+i+2]
				bp := b[p*nr+j : p*nr+j+4]
				a0, a1 := ap[0], ap[1]
				b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
				c00 += a0 * b0
				c01 += a0 * b1
				c02 += a0 * b2
				c03 += a0 * b3
				c10 += a1 * b0
				c11 += a1 * b1
				c12 += a1 * b2
				c13 += a1 * b3
			}
			store4(c[i*ldc+j:i*ldc+j+4], alpha, beta, c00, c01, c02, c03)
			store4(c[(i+1)*ldc+j:(i+1)*ldc+j+4], alpha, beta, c10, c11, c12, c13)
		}
	}
}

// store4 writes dst = alpha·s + beta·dst for four sums (dst unread when
// beta == 0).
func store4(dst []float32, alpha, beta float32, s0, s1, s2, s3 float32) {
	dst = dst[:4]
	if beta == 0 {
		dst[0], dst[1], dst[2], dst[3] = alpha*s0, alpha*s1, alpha*s2, alpha*s3
		return
	}
	dst[0] = alpha*s0 + beta*dst[0]
	dst[1] = alpha*s1 + beta*dst[1]
	dst[2] = alpha*s2 + beta*dst[2]
	dst[3] = alpha*s3 + beta*dst[3]
}
