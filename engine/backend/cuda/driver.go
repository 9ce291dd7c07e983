//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// The CUDA driver API, bound directly. gorgonia.org/cu v0.9.6 would do,
// but its package init calls cuInit and exits the process when that fails:
// a binary built with -tags cuda could then not even start on a machine
// without a GPU, and "backend cuda: no CUDA device found" could never be
// reported. Here cuInit runs on first use and its failure is an error.
// NVRTC still comes from gorgonia.org/cu/nvrtc, which has no such init.

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

// driverInit initialises the driver once and reports its failure each time.
func driverInit() error {
	initOnce.Do(func() { initErr = check("cuInit", C.cuInit(0)) })
	return initErr
}

// check turns a CUresult into an error naming the call.
func check(call string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	var name, desc *C.char
	C.cuGetErrorName(r, &name)
	C.cuGetErrorString(r, &desc)
	if r == C.CUDA_ERROR_STUB_LIBRARY {
		return fmt.Errorf("%s: CUDA_ERROR_STUB_LIBRARY (the link-time stub libcuda is loaded, not a driver)", call)
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
	err := check("cuDeviceGetCount", C.cuDeviceGetCount(&n))
	return int(n), err
}

// capability returns the compute capability and the name of device ordinal.
func capability(ordinal int) (dev C.CUdevice, major, minor int, name string, err error) {
	if err = check("cuDeviceGet", C.cuDeviceGet(&dev, C.int(ordinal))); err != nil {
		return
	}
	var ma, mi C.int
	if err = check("cuDeviceGetAttribute", C.cuDeviceGetAttribute(&ma, C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)); err != nil {
		return
	}
	if err = check("cuDeviceGetAttribute", C.cuDeviceGetAttribute(&mi, C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)); err != nil {
		return
	}
	var buf [256]C.char
	if err = check("cuDeviceGetName", C.cuDeviceGetName(&buf[0], C.int(len(buf)), dev)); err != nil {
		return
	}
	return dev, int(ma), int(mi), C.GoString(&buf[0]), nil
}

func ctxCreate(dev C.CUdevice) (C.CUcontext, error) {
	var ctx C.CUcontext
	err := check("cuCtxCreate", C.cuCtxCreate(&ctx, C.CU_CTX_SCHED_AUTO, dev))
	return ctx, err
}

func ctxSetCurrent(ctx C.CUcontext) error { return check("cuCtxSetCurrent", C.cuCtxSetCurrent(ctx)) }
func ctxDestroy(ctx C.CUcontext) error    { return check("cuCtxDestroy", C.cuCtxDestroy(ctx)) }

func streamCreate() (C.CUstream, error) {
	var s C.CUstream
	err := check("cuStreamCreate", C.cuStreamCreate(&s, C.CU_STREAM_NON_BLOCKING))
	return s, err
}

func streamSync(s C.CUstream) error    { return check("cuStreamSynchronize", C.cuStreamSynchronize(s)) }
func streamDestroy(s C.CUstream) error { return check("cuStreamDestroy", C.cuStreamDestroy(s)) }

// moduleLoad loads PTX text; the driver JIT-compiles it for the device.
func moduleLoad(ptx string) (C.CUmodule, error) {
	src := C.CString(ptx)
	defer C.free(unsafe.Pointer(src))
	var m C.CUmodule
	err := check("cuModuleLoadData", C.cuModuleLoadData(&m, unsafe.Pointer(src)))
	return m, err
}

func moduleFunction(m C.CUmodule, name string) (C.CUfunction, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.CUfunction
	err := check("cuModuleGetFunction "+name, C.cuModuleGetFunction(&f, m, cname))
	return f, err
}

func moduleUnload(m C.CUmodule) error { return check("cuModuleUnload", C.cuModuleUnload(m)) }

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
	return check("cuLaunchKernel", C.cuLaunchKernel(f, C.uint(grid), 1, 1, C.uint(threads), 1, 1, 0, s, &ptrs[0], nil))
}

func memAlloc(bytes int) (devptr, error) {
	var p C.CUdeviceptr
	err := check("cuMemAlloc", C.cuMemAlloc(&p, C.size_t(bytes)))
	return devptr(p), err
}

func memFree(p devptr) error { return check("cuMemFree", C.cuMemFree(C.CUdeviceptr(p))) }

func memInfo() (free, total int) {
	var f, t C.size_t
	C.cuMemGetInfo(&f, &t)
	return int(f), int(t)
}

// memcpyHtoD queues a copy of n bytes from host memory h; for pageable
// memory the call returns once h is staged, so h may be reused at once.
func memcpyHtoD(dst devptr, h unsafe.Pointer, n int, s C.CUstream) error {
	return check("cuMemcpyHtoDAsync", C.cuMemcpyHtoDAsync(C.CUdeviceptr(dst), h, C.size_t(n), s))
}

// memcpyDtoH queues a copy of n bytes into host memory h; synchronise the
// stream before reading h.
func memcpyDtoH(h unsafe.Pointer, src devptr, n int, s C.CUstream) error {
	return check("cuMemcpyDtoHAsync", C.cuMemcpyDtoHAsync(h, C.CUdeviceptr(src), C.size_t(n), s))
}

// memcpyDtoD queues a copy of n bytes between device buffers.
func memcpyDtoD(dst, src devptr, n int, s C.CUstream) error {
	return check("cuMemcpyDtoDAsync", C.cuMemcpyDtoDAsync(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), s))
}

func memsetD32(dst devptr, words int, s C.CUstream) error {
	return check("cuMemsetD32Async", C.cuMemsetD32Async(C.CUdeviceptr(dst), 0, C.size_t(words), s))
}
