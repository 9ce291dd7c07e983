//go:build cuda

package cuda

/*
#include <stdlib.h>
#include "dl.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// The CUDA driver API, through the pointers of dl.h: libcuda.so.1 is
// opened on first use (loader.go), then cuInit runs, and the failure of
// either is an error ("no CUDA driver: libcuda.so.1 not found (looked in
// ...)", "no CUDA device found (cuInit: ...)"), so a binary built with
// -tags cuda starts on any machine. gorgonia.org/cu is not used: its
// package links libcuda by soname and its init exits the process when
// cuInit fails (docs/decisions.md, 33).

// Driver handles, named for the files without a C preamble.
type (
	cuContext  = C.CUcontext
	cuStream   = C.CUstream
	cuModule   = C.CUmodule
	cuFunction = C.CUfunction
)

// devptr is a device address.
type devptr uint64

// add returns the address of float number i from p.
func (p devptr) add(i int) devptr { return p + devptr(4*i) }

var (
	initOnce sync.Once
	initErr  error
)

// driverInit loads and initialises the driver once and reports its failure
// each time.
func driverInit() error {
	initOnce.Do(func() {
		if initErr = driverLib.load(); initErr != nil {
			return
		}
		if err := check("cuInit", C.dl_cuInit(0)); err != nil {
			initErr = fmt.Errorf("no CUDA device found (%w)", err)
		}
	})
	return initErr
}

// check turns a CUresult into an error naming the call.
func check(call string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	var name, desc *C.char
	C.dl_cuGetErrorName(r, &name)
	C.dl_cuGetErrorString(r, &desc)
	if r == C.CUDA_ERROR_STUB_LIBRARY {
		return fmt.Errorf("%s: CUDA_ERROR_STUB_LIBRARY (%s is the toolkit's link-time stub, not a driver)", call, driverLib.path)
	}
	if name == nil || desc == nil {
		return fmt.Errorf("%s: CUDA error %d", call, int(r))
	}
	return fmt.Errorf("%s: %s (%s)", call, C.GoString(name), C.GoString(desc))
}

func deviceCount() (int, error) {
	if err := driverInit(); err != nil {
		return 0, err
	}
	var n C.int
	if err := check("cuDeviceGetCount", C.dl_cuDeviceGetCount(&n)); err != nil {
		return 0, fmt.Errorf("no CUDA device found (%w)", err)
	}
	return int(n), nil
}

// capability returns the compute capability and the name of device ordinal.
func capability(ordinal int) (dev C.CUdevice, major, minor int, name string, err error) {
	if err = check("cuDeviceGet", C.dl_cuDeviceGet(&dev, C.int(ordinal))); err != nil {
		return
	}
	var ma, mi C.int
	if err = check("cuDeviceGetAttribute", C.dl_cuDeviceGetAttribute(&ma, C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)); err != nil {
		return
	}
	if err = check("cuDeviceGetAttribute", C.dl_cuDeviceGetAttribute(&mi, C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)); err != nil {
		return
	}
	var buf [256]C.char
	if err = check("cuDeviceGetName", C.dl_cuDeviceGetName(&buf[0], C.int(len(buf)), dev)); err != nil {
		return
	}
	return dev, int(ma), int(mi), C.GoString(&buf[0]), nil
}

func ctxCreate(dev C.CUdevice) (C.CUcontext, error) {
	var ctx C.CUcontext
	err := check("cuCtxCreate", C.dl_cuCtxCreate(&ctx, C.CU_CTX_SCHED_AUTO, dev))
	return ctx, err
}

func ctxSetCurrent(ctx C.CUcontext) error { return check("cuCtxSetCurrent", C.dl_cuCtxSetCurrent(ctx)) }
func ctxDestroy(ctx C.CUcontext) error    { return check("cuCtxDestroy", C.dl_cuCtxDestroy(ctx)) }

func streamCreate() (C.CUstream, error) {
	var s C.CUstream
	err := check("cuStreamCreate", C.dl_cuStreamCreate(&s, C.CU_STREAM_NON_BLOCKING))
	return s, err
}

func streamSync(s C.CUstream) error    { return check("cuStreamSynchronize", C.dl_cuStreamSynchronize(s)) }
func streamDestroy(s C.CUstream) error { return check("cuStreamDestroy", C.dl_cuStreamDestroy(s)) }

// moduleLoad loads PTX text; the driver JIT-compiles it for the device.
func moduleLoad(ptx string) (C.CUmodule, error) {
	src := C.CString(ptx)
	defer C.free(unsafe.Pointer(src))
	var m C.CUmodule
	err := check("cuModuleLoadData", C.dl_cuModuleLoadData(&m, unsafe.Pointer(src)))
	return m, err
}

func moduleFunction(m C.CUmodule, name string) (C.CUfunction, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.CUfunction
	err := check("cuModuleGetFunction "+name, C.dl_cuModuleGetFunction(&f, m, cname))
	return f, err
}

func moduleUnload(m C.CUmodule) error { return check("cuModuleUnload", C.dl_cuModuleUnload(m)) }

// launchKernel queues f with each argument given as the 8 bytes of args[i]
// (the kernel reads its parameter's size from the low, little-endian
// bytes). The argument block is C memory: cgo forbids passing Go memory
// that holds pointers.
func launchKernel(f C.CUfunction, grid, threads int, s C.CUstream, args []uint64) error {
	n := max(len(args), 1)
	vals := (*[1 << 20]C.ulonglong)(C.malloc(C.size_t(8 * n)))[:n:n]
	ptrs := (*[1 << 20]unsafe.Pointer)(C.malloc(C.size_t(8 * n)))[:n:n]
	defer C.free(unsafe.Pointer(&vals[0]))
	defer C.free(unsafe.Pointer(&ptrs[0]))
	for i, a := range args {
		vals[i] = C.ulonglong(a)
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	return check("cuLaunchKernel", C.dl_cuLaunchKernel(f, C.uint(grid), 1, 1, C.uint(threads), 1, 1, 0, s, &ptrs[0], nil))
}

func memAlloc(bytes int) (devptr, error) {
	var p C.CUdeviceptr
	err := check("cuMemAlloc", C.dl_cuMemAlloc(&p, C.size_t(bytes)))
	return devptr(p), err
}

func memFree(p devptr) error { return check("cuMemFree", C.dl_cuMemFree(C.CUdeviceptr(p))) }

func memInfo() (free, total int) {
	var f, t C.size_t
	C.dl_cuMemGetInfo(&f, &t)
	return int(f), int(t)
}

// memcpyHtoD queues a copy of n bytes from host memory h; for pageable
// memory the call returns once h is staged, so h may be reused at once.
func memcpyHtoD(dst devptr, h unsafe.Pointer, n int, s C.CUstream) error {
	return check("cuMemcpyHtoDAsync", C.dl_cuMemcpyHtoDAsync(C.CUdeviceptr(dst), h, C.size_t(n), s))
}

// memcpyDtoH queues a copy of n bytes into host memory h; synchronise the
// stream before reading h.
func memcpyDtoH(h unsafe.Pointer, src devptr, n int, s C.CUstream) error {
	return check("cuMemcpyDtoHAsync", C.dl_cuMemcpyDtoHAsync(h, C.CUdeviceptr(src), C.size_t(n), s))
}

// memcpyDtoD queues a copy of n bytes between device buffers.
func memcpyDtoD(dst, src devptr, n int, s C.CUstream) error {
	return check("cuMemcpyDtoDAsync", C.dl_cuMemcpyDtoDAsync(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), s))
}

func memsetD32(dst devptr, words int, s C.CUstream) error {
	return check("cuMemsetD32Async", C.dl_cuMemsetD32Async(C.CUdeviceptr(dst), 0, C.size_t(words), s))
}
