// dl.h: the CUDA driver API, cuBLAS, NVRTC and NCCL through function pointers
// that dl.c fills with dlsym from libraries opened at run time (loader.go
// finds them). The binary links none of them, so one build runs against
// CUDA 11, 12 or 13 libraries, or starts without any and says what it
// looked for.
//
// Each X(name, symbol, params, args) below declares dl_<name>, which calls
// the library's <symbol> (the versioned names the CUDA 11.8 headers map
// the API to, e.g. cuMemAlloc → cuMemAlloc_v2) and returns the library's
// "not initialised" status while the library is not loaded. The types come
// from the 11.8 headers; every call used keeps its signature and its enum
// values (CUBLAS_COMPUTE_32F, CUDA_R_16BF, ...) in cuBLAS 12 and 13 and
// in the drivers of CUDA 12 and 13, which still export the _v2 entry
// points for programs built against older toolkits.

#ifndef RAGEN_CUDA_DL_H
#define RAGEN_CUDA_DL_H

#include <cuda.h>
#include <cublas_v2.h>
#include <nvrtc.h>
#include "nccl_abi.h"

// Library ids, indexes of loader.go's libraries.
enum { DL_CUDA, DL_CUBLAS, DL_NVRTC, DL_NCCL };

#define DL_CUDA_FUNCS(X) \
	X(cuInit, cuInit, (unsigned int flags), (flags)) \
	X(cuDriverGetVersion, cuDriverGetVersion, (int *version), (version)) \
	X(cuGetErrorName, cuGetErrorName, (CUresult r, const char **s), (r, s)) \
	X(cuGetErrorString, cuGetErrorString, (CUresult r, const char **s), (r, s)) \
	X(cuDeviceGetCount, cuDeviceGetCount, (int *n), (n)) \
	X(cuDeviceGet, cuDeviceGet, (CUdevice *dev, int ordinal), (dev, ordinal)) \
	X(cuDeviceGetAttribute, cuDeviceGetAttribute, (int *v, CUdevice_attribute a, CUdevice dev), (v, a, dev)) \
	X(cuDeviceGetName, cuDeviceGetName, (char *name, int len, CUdevice dev), (name, len, dev)) \
	X(cuCtxCreate, cuCtxCreate_v2, (CUcontext *ctx, unsigned int flags, CUdevice dev), (ctx, flags, dev)) \
	X(cuCtxSetCurrent, cuCtxSetCurrent, (CUcontext ctx), (ctx)) \
	X(cuCtxDestroy, cuCtxDestroy_v2, (CUcontext ctx), (ctx)) \
	X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, (CUcontext *ctx, CUdevice dev), (ctx, dev)) \
	X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev)) \
	X(cuStreamCreate, cuStreamCreate, (CUstream *s, unsigned int flags), (s, flags)) \
	X(cuStreamSynchronize, cuStreamSynchronize, (CUstream s), (s)) \
	X(cuStreamQuery, cuStreamQuery, (CUstream s), (s)) \
	X(cuStreamDestroy, cuStreamDestroy_v2, (CUstream s), (s)) \
	X(cuModuleLoadData, cuModuleLoadData, (CUmodule *m, const void *image), (m, image)) \
	X(cuModuleGetFunction, cuModuleGetFunction, (CUfunction *f, CUmodule m, const char *name), (f, m, name)) \
	X(cuModuleUnload, cuModuleUnload, (CUmodule m), (m)) \
	X(cuLaunchKernel, cuLaunchKernel, (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, \
		unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params, void **extra), \
		(f, gx, gy, gz, bx, by, bz, shared, s, params, extra)) \
	X(cuMemAlloc, cuMemAlloc_v2, (CUdeviceptr *p, size_t bytes), (p, bytes)) \
	X(cuMemFree, cuMemFree_v2, (CUdeviceptr p), (p)) \
	X(cuMemGetInfo, cuMemGetInfo_v2, (size_t *free, size_t *total), (free, total)) \
	X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, (CUdeviceptr dst, const void *src, size_t n, CUstream s), (dst, src, n, s)) \
	X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, (void *dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s)) \
	X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s)) \
	X(cuMemsetD32Async, cuMemsetD32Async, (CUdeviceptr dst, unsigned int v, size_t n, CUstream s), (dst, v, n, s))

#define DL_CUBLAS_FUNCS(X) \
	X(cublasGetProperty, cublasGetProperty, (libraryPropertyType t, int *v), (t, v)) \
	X(cublasCreate, cublasCreate_v2, (cublasHandle_t *h), (h)) \
	X(cublasDestroy, cublasDestroy_v2, (cublasHandle_t h), (h)) \
	X(cublasSetStream, cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s)) \
	X(cublasSetMathMode, cublasSetMathMode, (cublasHandle_t h, cublasMath_t m), (h, m)) \
	X(cublasSgemm, cublasSgemm_v2, (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, \
		const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta, float *c, int ldc), \
		(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) \
	X(cublasSgemmStridedBatched, cublasSgemmStridedBatched, (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, \
		int m, int n, int k, const float *alpha, const float *a, int lda, long long sa, const float *b, int ldb, long long sb, \
		const float *beta, float *c, int ldc, long long sc, int count), \
		(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count)) \
	X(cublasGemmEx, cublasGemmEx, (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, \
		const void *alpha, const void *a, cudaDataType at, int lda, const void *b, cudaDataType bt, int ldb, \
		const void *beta, void *c, cudaDataType ct, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo), \
		(h, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc, compute, algo))

#define DL_NVRTC_FUNCS(X) \
	X(nvrtcVersion, nvrtcVersion, (int *major, int *minor), (major, minor)) \
	X(nvrtcCreateProgram, nvrtcCreateProgram, (nvrtcProgram *p, const char *src, const char *name, int nheaders, \
		const char *const *headers, const char *const *includes), (p, src, name, nheaders, headers, includes)) \
	X(nvrtcCompileProgram, nvrtcCompileProgram, (nvrtcProgram p, int nopts, const char *const *opts), (p, nopts, opts)) \
	X(nvrtcGetProgramLogSize, nvrtcGetProgramLogSize, (nvrtcProgram p, size_t *n), (p, n)) \
	X(nvrtcGetProgramLog, nvrtcGetProgramLog, (nvrtcProgram p, char *log), (p, log)) \
	X(nvrtcGetPTXSize, nvrtcGetPTXSize, (nvrtcProgram p, size_t *n), (p, n)) \
	X(nvrtcGetPTX, nvrtcGetPTX, (nvrtcProgram p, char *ptx), (p, ptx)) \
	X(nvrtcDestroyProgram, nvrtcDestroyProgram, (nvrtcProgram *p), (p))

// NCCL 2 (libnccl.so.2), opened only for a data-parallel run on GPUs.
#define DL_NCCL_FUNCS(X) \
	X(ncclGetVersion, ncclGetVersion, (int *v), (v)) \
	X(ncclGetUniqueId, ncclGetUniqueId, (ncclUniqueId *id), (id)) \
	X(ncclCommInitRank, ncclCommInitRank, (ncclComm_t *comm, int nranks, ncclUniqueId id, int rank), \
		(comm, nranks, id, rank)) \
	X(ncclCommDestroy, ncclCommDestroy, (ncclComm_t comm), (comm)) \
	X(ncclCommAbort, ncclCommAbort, (ncclComm_t comm), (comm)) \
	X(ncclCommGetAsyncError, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t *err), (comm, err)) \
	X(ncclAllReduce, ncclAllReduce, (const void *send, void *recv, size_t count, ncclDataType_t type, \
		ncclRedOp_t op, ncclComm_t comm, CUstream s), (send, recv, count, type, op, comm, s)) \
	X(ncclAllGather, ncclAllGather, (const void *send, void *recv, size_t count, ncclDataType_t type, \
		ncclComm_t comm, CUstream s), (send, recv, count, type, comm, s))

// Optional: missing from an NVRTC older than 11.2; dl_ returns
// NVRTC_ERROR_INVALID_INPUT then.
#define DL_NVRTC_OPTIONAL(X) \
	X(nvrtcGetNumSupportedArchs, nvrtcGetNumSupportedArchs, (int *n), (n)) \
	X(nvrtcGetSupportedArchs, nvrtcGetSupportedArchs, (int *archs), (archs))

#define DL_DECLARE_CU(name, symbol, params, args) CUresult dl_##name params;
#define DL_DECLARE_CUBLAS(name, symbol, params, args) cublasStatus_t dl_##name params;
#define DL_DECLARE_NVRTC(name, symbol, params, args) nvrtcResult dl_##name params;
#define DL_DECLARE_NCCL(name, symbol, params, args) ncclResult_t dl_##name params;
DL_CUDA_FUNCS(DL_DECLARE_CU)
DL_CUBLAS_FUNCS(DL_DECLARE_CUBLAS)
DL_NVRTC_FUNCS(DL_DECLARE_NVRTC)
DL_NVRTC_OPTIONAL(DL_DECLARE_NVRTC)
DL_NCCL_FUNCS(DL_DECLARE_NCCL)

// dl_ncclGetErrorString is bound with NCCL's list; "NCCL not loaded"
// before.
const char *dl_ncclGetErrorString(ncclResult_t r);

// dl_nvrtcGetErrorString, the one call that returns no status, is bound
// with NVRTC's list; "NVRTC not loaded" before.
const char *dl_nvrtcGetErrorString(nvrtcResult r);

// dl_open opens the library at path (a file, or a bare soname for the
// loader's own search) with RTLD_NOW and RTLD_LOCAL, or RTLD_GLOBAL when
// global is set. On failure it returns NULL and sets *err to dlerror's
// text (static storage: copy it before the next dl call).
void *dl_open(const char *path, int global, const char **err);

// dl_close closes a handle from dl_open.
void dl_close(void *h);

// dl_path is the file the loader opened for h, NULL if unknown.
const char *dl_path(void *h);

// dl_bind looks up every required function of library lib (DL_CUDA, ...)
// in h and, when all are there, returns NULL and (if commit) points the
// dl_ calls at them; otherwise it binds nothing and returns the first
// missing name.
const char *dl_bind(int lib, void *h, int commit);

#endif
