//go:build cuda

// dl.c: the function pointers of dl.h, their dl_ calls, and dlopen/dlsym.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include "dl.h"

// One pointer per function, typed from the 11.8 header's prototype of the
// symbol, so a wrong parameter list in dl.h does not compile.
#define DL_POINTER(name, symbol, params, args) static __typeof__(symbol) *p_##name;
DL_CUDA_FUNCS(DL_POINTER)
DL_CUBLAS_FUNCS(DL_POINTER)
DL_NVRTC_FUNCS(DL_POINTER)
DL_NVRTC_OPTIONAL(DL_POINTER)
DL_NCCL_FUNCS(DL_POINTER)
static __typeof__(nvrtcGetErrorString) *p_nvrtcGetErrorString;
static __typeof__(ncclGetErrorString) *p_ncclGetErrorString;

#define DL_CALL_CU(name, symbol, params, args) \
	CUresult dl_##name params { return p_##name ? p_##name args : CUDA_ERROR_NOT_INITIALIZED; }
#define DL_CALL_CUBLAS(name, symbol, params, args) \
	cublasStatus_t dl_##name params { return p_##name ? p_##name args : CUBLAS_STATUS_NOT_INITIALIZED; }
#define DL_CALL_NVRTC(name, symbol, params, args) \
	nvrtcResult dl_##name params { return p_##name ? p_##name args : NVRTC_ERROR_INVALID_INPUT; }
DL_CUDA_FUNCS(DL_CALL_CU)
DL_CUBLAS_FUNCS(DL_CALL_CUBLAS)
#define DL_CALL_NCCL(name, symbol, params, args) \
	ncclResult_t dl_##name params { return p_##name ? p_##name args : ncclInvalidUsage; }
DL_NVRTC_FUNCS(DL_CALL_NVRTC)
DL_NVRTC_OPTIONAL(DL_CALL_NVRTC)
DL_NCCL_FUNCS(DL_CALL_NCCL)

const char *dl_nvrtcGetErrorString(nvrtcResult r) {
	return p_nvrtcGetErrorString ? p_nvrtcGetErrorString(r) : "NVRTC not loaded";
}

const char *dl_ncclGetErrorString(ncclResult_t r) {
	return p_ncclGetErrorString ? p_ncclGetErrorString(r) : "NCCL not loaded";
}

// Symbol tables: name in the library, the pointer it sets.
struct dl_sym {
	const char *symbol;
	void **ptr;
};
#define DL_SYM(name, symbol, params, args) {#symbol, (void **)&p_##name},
static struct dl_sym cuda_syms[] = {DL_CUDA_FUNCS(DL_SYM)};
static struct dl_sym cublas_syms[] = {DL_CUBLAS_FUNCS(DL_SYM)};
static struct dl_sym nvrtc_syms[] = {DL_NVRTC_FUNCS(DL_SYM){"nvrtcGetErrorString", (void **)&p_nvrtcGetErrorString}};
static struct dl_sym nvrtc_optional[] = {DL_NVRTC_OPTIONAL(DL_SYM)};
static struct dl_sym nccl_syms[] = {DL_NCCL_FUNCS(DL_SYM){"ncclGetErrorString", (void **)&p_ncclGetErrorString}};

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

void *dl_open(const char *path, int global, const char **err) {
	void *h = dlopen(path, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
	if (h == NULL) {
		*err = dlerror();
	}
	return h;
}

void dl_close(void *h) { dlclose(h); }

const char *dl_path(void *h) {
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL) {
		return NULL;
	}
	return lm->l_name;
}

const char *dl_bind(int lib, void *h, int commit) {
	struct dl_sym *syms;
	size_t n;
	switch (lib) {
	case DL_CUDA:
		syms = cuda_syms, n = LEN(cuda_syms);
		break;
	case DL_CUBLAS:
		syms = cublas_syms, n = LEN(cublas_syms);
		break;
	case DL_NVRTC:
		syms = nvrtc_syms, n = LEN(nvrtc_syms);
		break;
	case DL_NCCL:
		syms = nccl_syms, n = LEN(nccl_syms);
		break;
	default:
		return "(unknown library)";
	}
	void *found[64];
	if (n > LEN(found)) {
		return "(too many symbols)";
	}
	for (size_t i = 0; i < n; i++) {
		if ((found[i] = dlsym(h, syms[i].symbol)) == NULL) {
			return syms[i].symbol;
		}
	}
	if (!commit) {
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		*syms[i].ptr = found[i];
	}
	if (lib == DL_NVRTC) {
		for (size_t i = 0; i < LEN(nvrtc_optional); i++) {
			*nvrtc_optional[i].ptr = dlsym(h, nvrtc_optional[i].symbol);
		}
	}
	return NULL;
}
