//go:build cuda

package cuda

/*
#include <stdlib.h>
#include "dl.h"
*/
import "C"

import (
	_ "embed"
	"fmt"
	"math"
	"slices"
	"unsafe"
)

//go:embed kernels.cu
var kernelSource string

// block is the threads per block of every launch; kernels.cu's BLOCK.
const block = 256

// kernelNames are the entry points of kernels.cu looked up after loading.
var kernelNames = []string{
	"add", "scale", "add_bias", "column_sum",
	"embedding_forward", "embedding_forward_bf16", "embedding_backward",
	"rmsnorm_forward", "rmsnorm_backward_dx", "rmsnorm_backward_dw",
	"rope", "softmax_causal", "softmax_causal_backward", "append_kv", "attend_cached", "split_qkv",
	"swiglu_forward", "swiglu_rows", "swiglu_backward",
	"logsoftmax_forward", "logsoftmax_backward",
	"adamw", "sumsq_partial", "sum_final",
	"f32_to_bf16", "bf16_to_f32", "sample_rows",
}

// compile turns kernels.cu into PTX with NVRTC for compute capability
// major.minor. An NVRTC older than the device does not know its
// architecture: then lower ones are tried (those NVRTC lists as supported,
// else a fixed list down to compute_52), since PTX for an older
// architecture is JIT-compiled by the driver for newer ones.
func compile(major, minor int) (ptx string, arch string, err error) {
	dev := major*10 + minor
	var archs []int
	if supported := supportedArchs(); len(supported) > 0 {
		for _, a := range slices.Backward(supported) {
			if a <= dev {
				archs = append(archs, a)
			}
		}
	} else {
		archs = []int{dev}
		for _, a := range []int{90, 89, 87, 86, 80, 75, 70, 61, 52} {
			if a < dev {
				archs = append(archs, a)
			}
		}
	}
	if len(archs) == 0 { // older than NVRTC supports: its error says so
		archs = []int{dev}
	}
	var first error
	for _, a := range archs {
		arch = fmt.Sprintf("compute_%d", a)
		ptx, err = compileFor(arch)
		if err == nil {
			return ptx, arch, nil
		}
		if first == nil {
			first = err
		}
	}
	return "", "", first
}

// supportedArchs lists the compute capabilities NVRTC compiles for,
// ascending (e.g. 75 … 120), or nil when NVRTC cannot say (before 11.2).
func supportedArchs() []int {
	if nvrtcLib.load() != nil {
		return nil
	}
	return nvrtcArchs()
}

// nvrtcArchs is supportedArchs once NVRTC is loaded.
func nvrtcArchs() []int {
	var n C.int
	if C.dl_nvrtcGetNumSupportedArchs(&n) != C.NVRTC_SUCCESS || n <= 0 {
		return nil
	}
	archs := make([]C.int, n)
	if C.dl_nvrtcGetSupportedArchs(&archs[0]) != C.NVRTC_SUCCESS {
		return nil
	}
	out := make([]int, n)
	for i, a := range archs {
		out[i] = int(a)
	}
	slices.Sort(out)
	return out
}

// compileFor compiles kernels.cu for one virtual architecture. No -std:
// every NVRTC from 11.0 to 13 defaults to C++17, and 13 drops the older
// dialects.
func compileFor(arch string) (string, error) {
	if err := nvrtcLib.load(); err != nil {
		return "", err
	}
	src := C.CString(kernelSource)
	defer C.free(unsafe.Pointer(src))
	name := C.CString("kernels.cu")
	defer C.free(unsafe.Pointer(name))
	var prog C.nvrtcProgram
	if r := C.dl_nvrtcCreateProgram(&prog, src, name, 0, nil, nil); r != C.NVRTC_SUCCESS {
		return "", fmt.Errorf("nvrtc: create program: %s", C.GoString(C.dl_nvrtcGetErrorString(r)))
	}
	defer C.dl_nvrtcDestroyProgram(&prog)
	opt := C.CString("--gpu-architecture=" + arch)
	defer C.free(unsafe.Pointer(opt))
	if r := C.dl_nvrtcCompileProgram(prog, 1, &opt); r != C.NVRTC_SUCCESS {
		return "", fmt.Errorf("nvrtc: compile kernels.cu for %s: %s\n%s", arch, C.GoString(C.dl_nvrtcGetErrorString(r)), programLog(prog))
	}
	var n C.size_t
	if r := C.dl_nvrtcGetPTXSize(prog, &n); r != C.NVRTC_SUCCESS {
		return "", fmt.Errorf("nvrtc: PTX size: %s", C.GoString(C.dl_nvrtcGetErrorString(r)))
	}
	ptx := make([]byte, n)
	if r := C.dl_nvrtcGetPTX(prog, (*C.char)(unsafe.Pointer(&ptx[0]))); r != C.NVRTC_SUCCESS {
		return "", fmt.Errorf("nvrtc: PTX: %s", C.GoString(C.dl_nvrtcGetErrorString(r)))
	}
	return string(ptx[:len(ptx)-1]), nil // without the trailing NUL
}

// programLog is NVRTC's compile log for prog.
func programLog(prog C.nvrtcProgram) string {
	var n C.size_t
	if C.dl_nvrtcGetProgramLogSize(prog, &n) != C.NVRTC_SUCCESS || n <= 1 {
		return ""
	}
	log := make([]byte, n)
	if C.dl_nvrtcGetProgramLog(prog, (*C.char)(unsafe.Pointer(&log[0]))) != C.NVRTC_SUCCESS {
		return ""
	}
	return string(log[:n-1])
}

// loadKernels loads the PTX into a module and looks up every kernel.
func loadKernels(ptx string) (cuModule, map[string]cuFunction, error) {
	mod, err := moduleLoad(ptx)
	if err != nil {
		return mod, nil, fmt.Errorf("load kernels: %w", err)
	}
	fns := make(map[string]cuFunction, len(kernelNames))
	for _, name := range kernelNames {
		fn, err := moduleFunction(mod, name)
		if err != nil {
			moduleUnload(mod)
			return mod, nil, fmt.Errorf("load kernels: %w", err)
		}
		fns[name] = fn
	}
	return mod, fns, nil
}

// launch queues kernel name on the backend's stream with grid × block
// threads. Every argument is widened into 8 bytes (see launchKernel): the
// kernel reads the low bytes, which hold the int32, float32 or pointer.
func (b *Backend) launch(name string, grid, threads int, args ...any) {
	if b.err != nil || grid == 0 {
		return
	}
	vals := make([]uint64, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case devptr:
			vals[i] = uint64(v)
		case *buffer:
			vals[i] = uint64(v.ptr)
		case *bf16buf:
			vals[i] = uint64(v.ptr)
		case int:
			vals[i] = uint64(uint32(int32(v)))
		case float32:
			vals[i] = uint64(math.Float32bits(v))
		default:
			b.err = fmt.Errorf("backend cuda: launch %s: argument %d has unsupported type %T", name, i, a)
			return
		}
	}
	if err := launchKernel(b.fns[name], grid, threads, b.stream, vals); err != nil {
		b.err = fmt.Errorf("backend cuda: launch %s: %w", name, err)
	}
}

// grid1 launches one thread per element of n.
func (b *Backend) grid1(name string, n int, args ...any) {
	b.launch(name, (n+block-1)/block, block, args...)
}

// rows launches one block per row.
func (b *Backend) rows(name string, rows int, args ...any) {
	b.launch(name, rows, block, args...)
}
