//go:build cuda

package cuda

/*
#include "dl.h"

// Device pointers cross from Go as integers (they are not Go pointers) and
// become float* here. Row-major to column-major: see sgemm in blas.go.
static cublasStatus_t rowSgemm(cublasHandle_t h, int ta, int tb, int M, int N, int K,
		float alpha, unsigned long long a, int lda, unsigned long long b, int ldb,
		float beta, unsigned long long c, int ldc) {
	return dl_cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
		N, M, K, &alpha, (const float*)b, ldb, (const float*)a, lda, &beta, (float*)c, ldc);
}

static cublasStatus_t rowSgemmStrided(cublasHandle_t h, int ta, int tb, int M, int N, int K,
		float alpha, unsigned long long a, int lda, long long sa, unsigned long long b, int ldb, long long sb,
		float beta, unsigned long long c, int ldc, long long sc, int count) {
	return dl_cublasSgemmStridedBatched(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
		N, M, K, &alpha, (const float*)b, ldb, sb, (const float*)a, lda, sa, &beta, (float*)c, ldc, sc, count);
}

// rowGemmBF16 is rowSgemm on bf16 A and B with a float32 C, accumulating
// in float32 (cublasGemmEx, CUBLAS_COMPUTE_32F).
static cublasStatus_t rowGemmBF16(cublasHandle_t h, int ta, int tb, int M, int N, int K,
		float alpha, unsigned long long a, int lda, unsigned long long b, int ldb,
		float beta, unsigned long long c, int ldc) {
	return dl_cublasGemmEx(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
		N, M, K, &alpha, (const void*)b, CUDA_R_16BF, ldb, (const void*)a, CUDA_R_16BF, lda,
		&beta, (void*)c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
*/
import "C"

import "fmt"

// cuBLAS is bound here directly, through the pointers of dl.h (loader.go
// opens libcublas.so.13, .12 or .11), rather than through
// gorgonia.org/cu/blas: v0.9.6's wrapper links libcublas by soname, takes
// Go slices (device pointers would have to pose as []float32), cannot set a
// stream and has no strided-batched GEMM nor GemmEx. A few C functions are
// all the backend needs. The 11.8 header's cublasGemmEx takes a
// cublasComputeType_t, as cuBLAS 12 and 13 do (an int-sized enum, same
// values); CUBLAS_DEFAULT_MATH keeps TF32 off in all three.

type blasHandle struct{ h C.cublasHandle_t }

// newBlas creates a handle bound to stream, with TF32 tensor-op math off so
// products keep float32 precision (the parity tolerance is 1e-3).
func newBlas(stream cuStream) (*blasHandle, error) {
	if err := blasLib.load(); err != nil {
		return nil, err
	}
	var h C.cublasHandle_t
	if st := C.dl_cublasCreate(&h); st != C.CUBLAS_STATUS_SUCCESS {
		return nil, fmt.Errorf("cublas: create: status %d", int(st))
	}
	// CUstream and cudaStream_t are the same C type.
	if st := C.dl_cublasSetStream(h, stream); st != C.CUBLAS_STATUS_SUCCESS {
		C.dl_cublasDestroy(h)
		return nil, fmt.Errorf("cublas: set stream: status %d", int(st))
	}
	if st := C.dl_cublasSetMathMode(h, C.CUBLAS_DEFAULT_MATH); st != C.CUBLAS_STATUS_SUCCESS {
		C.dl_cublasDestroy(h)
		return nil, fmt.Errorf("cublas: set math mode: status %d", int(st))
	}
	return &blasHandle{h}, nil
}

func (b *blasHandle) close() { C.dl_cublasDestroy(b.h) }

func flag(trans bool) C.int {
	if trans {
		return 1
	}
	return 0
}

// sgemm is row-major C = alpha·op(A)·op(B) + beta·C. cuBLAS is
// column-major, and a row-major matrix is its transpose in column-major,
// so it computes Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands swap, the flags stay.
func (b *blasHandle) sgemm(transA, transB bool, M, N, K int, alpha float32, a devptr, lda int, bb devptr, ldb int, beta float32, c devptr, ldc int) error {
	st := C.rowSgemm(b.h, flag(transA), flag(transB), C.int(M), C.int(N), C.int(K),
		C.float(alpha), C.ulonglong(a), C.int(lda), C.ulonglong(bb), C.int(ldb),
		C.float(beta), C.ulonglong(c), C.int(ldc))
	if st != C.CUBLAS_STATUS_SUCCESS {
		return fmt.Errorf("cublas: sgemm %dx%dx%d: status %d", M, N, K, int(st))
	}
	return nil
}

// sgemmStrided is sgemm over count matrices, the i-th at a + i·strideA
// (floats) and so on; a stride of 0 shares one operand across the batch
// (the key/value head of a query-head group).
func (b *blasHandle) sgemmStrided(transA, transB bool, M, N, K int, alpha float32, a devptr, lda, strideA int, bb devptr, ldb, strideB int, beta float32, c devptr, ldc, strideC, count int) error {
	st := C.rowSgemmStrided(b.h, flag(transA), flag(transB), C.int(M), C.int(N), C.int(K),
		C.float(alpha), C.ulonglong(a), C.int(lda), C.longlong(strideA), C.ulonglong(bb), C.int(ldb), C.longlong(strideB),
		C.float(beta), C.ulonglong(c), C.int(ldc), C.longlong(strideC), C.int(count))
	if st != C.CUBLAS_STATUS_SUCCESS {
		return fmt.Errorf("cublas: strided-batched sgemm %d×(%dx%dx%d): status %d", count, M, N, K, int(st))
	}
	return nil
}

// gemmBF16 is sgemm with bf16 a and bb (addresses of bf16 arrays) and a
// float32 c, products accumulated in float32.
func (b *blasHandle) gemmBF16(transA, transB bool, M, N, K int, alpha float32, a devptr, lda int, bb devptr, ldb int, beta float32, c devptr, ldc int) error {
	st := C.rowGemmBF16(b.h, flag(transA), flag(transB), C.int(M), C.int(N), C.int(K),
		C.float(alpha), C.ulonglong(a), C.int(lda), C.ulonglong(bb), C.int(ldb),
		C.float(beta), C.ulonglong(c), C.int(ldc))
	if st != C.CUBLAS_STATUS_SUCCESS {
		return fmt.Errorf("cublas: bf16 gemm %dx%dx%d: status %d", M, N, K, int(st))
	}
	return nil
}
