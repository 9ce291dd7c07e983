//go:build cuda

package cuda

import (
	_ "embed"
	"fmt"
	"math"

	"gorgonia.org/cu/nvrtc"
)

//go:embed kernels.cu
var kernelSource string

// block is the threads per block of every launch; kernels.cu's BLOCK.
const block = 256

// kernelNames are the entry points of kernels.cu looked up after loading.
var kernelNames = []string{
	"add", "scale", "add_bias", "column_sum",
	"embedding_forward", "embedding_backward",
	"rmsnorm_forward", "rmsnorm_backward_dx", "rmsnorm_backward_dw",
	"rope", "softmax_causal", "softmax_causal_backward", "append_kv", "attend_cached", "split_qkv",
	"swiglu_forward", "swiglu_rows", "swiglu_backward",
	"logsoftmax_forward", "logsoftmax_backward",
	"adamw", "sumsq_partial", "sum_final",
	"f32_to_bf16", "bf16_to_f32", "sample_rows",
}

// compile turns kernels.cu into PTX with NVRTC for compute capability
// major.minor. An NVRTC older than the device does not know its
// architecture: then lower ones are tried, down to compute_52, since PTX
// for an older architecture is JIT-compiled by the driver for newer ones.
func compile(major, minor int) (ptx string, arch string, err error) {
	archs := []int{major*10 + minor}
	for _, a := range []int{90, 89, 87, 86, 80, 75, 70, 61, 52} {
		if a < archs[0] {
			archs = append(archs, a)
		}
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

func compileFor(arch string) (string, error) {
	prog, err := nvrtc.CreateProgram(kernelSource, "kernels.cu")
	if err != nil {
		return "", fmt.Errorf("nvrtc: create program: %w", err)
	}
	defer prog.Destroy()
	if err := prog.Compile("--gpu-architecture="+arch, "--std=c++14"); err != nil {
		log, _ := prog.GetLog()
		return "", fmt.Errorf("nvrtc: compile kernels.cu for %s: %w\n%s", arch, err, log)
	}
	return prog.GetPTX()
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
