// Package backend is the compute interface of the engine and the registry
// of its implementations.
//
// A Backend owns float32 buffers (host memory for "cpu", device memory for
// "cuda") and runs the transformer's ops on them: embedding gather and
// scatter-add, RMSNorm, RoPE, causal grouped-query attention over packed
// sequences (and its one-token KV-cache form for decoding), SwiGLU,
// log-softmax with target gather and entropy, each with its backward; GEMM
// in the three layouts of a linear layer; AdamW; a deterministic gradient
// norm; sampling with temperature, top-k and top-p. The ops copy the
// signatures of the kernels in engine/backend/cpu, llm.c style, with
// Buffers in place of []float32; token ids, positions, sequence lengths and
// targets stay host []int, since the host is where they come from.
//
// On top of the interface, Transformer runs model.Model's forward and
// backward pass (LM head, value head, or both; model.Model's API) with
// parameters, gradients and activations in backend buffers (laid out by
// model.Layout), AdamW keeps its moments there too, and Decoder is
// model.Decoder's multi-turn generation (Append, Generate, Remove) with the
// KV caches on the backend: the host sends tokens and gets per-token
// log-probabilities, entropies, values, sampled tokens and norms back,
// never weights or activations.
//
// # Selecting a backend
//
// Implementations register from init: CPU (this package, the reference:
// the kernels of engine/backend/cpu on host slices) as "cpu" and again as
// "cpu-ref" (see below), and package
// engine/backend/cuda as "cuda" when the binary is built with -tags cuda
// and imports it (cmd/ragen does). Check(name) says whether a backend can
// run here, with the reason when not: "cuda" in a build without the tag
// says how to rebuild, and with the tag but no device says that none was
// found. Open(name) returns an instance. The trainer's config field
// `backend` (flag -backend) goes through Check. The trainer runs "cpu" on
// model.Model, whose fused kernels and packed-weight decoder are faster on
// the CPU than this package's reference, and every other backend through
// Transformer, AdamW and Decoder; "cpu-ref" selects that device path on
// the CPU reference, so it is tested without a GPU.
//
// # Errors
//
// Ops return nothing: a device backend queues them asynchronously. The
// first failure sticks (Err) and is returned by every call that brings data
// back to the host (Download, GradNorm, Sample), after which ops do nothing,
// as bufio.Writer does. Bad sizes are caught on the host before a kernel
// could write out of bounds.
//
// # The CUDA backend
//
// engine/backend/cuda binds the CUDA driver API (context, one non-blocking
// stream per Backend, device memory, module loading, kernel launch),
// cuBLAS and NVRTC with cgo through function pointers: libcuda.so.1, the
// newest libcublas and libnvrtc are opened with dlopen on first use (from
// the loader's path, a toolkit, or Python's NVIDIA wheels), so one binary
// runs with CUDA 11, 12 or 13, and one on a machine without a driver says
// what it looked for. NVRTC compiles kernels.cu, embedded with go:embed, at
// start for the device's compute capability (falling back to an older PTX
// target when NVRTC predates the device). gorgonia.org/cu is not used
// (docs/decisions.md, 32): it links libcuda and libnvrtc by soname, and its
// root package's init exits the process when cuInit fails; its cublas
// package takes Go slices, has no stream setter and no strided-batched
// GEMM.
//
// Matrix products go to cublasSgemm (row-major by computing the transposed
// product), attention to cublasSgemmStridedBatched over the query heads
// of each key/value group (stride 0 shares K and V), with our fused
// scale+mask+softmax kernel between the two products. Reductions use a
// fixed block size and tree; sums over rows (weight gradients, embedding
// scatter-add) run one thread per column over the rows in order, with no
// atomics, so results are the same on every run (not bit-equal to the CPU).
// TF32 is off: products stay float32.
//
// # Mixed precision
//
// Transformer.SetPrecision(BF16) (the trainer's `precision: bf16`, flag
// -precision) makes every matrix product of the Transformer and its
// Decoder read bfloat16 inputs and accumulate in float32:
//
//   - the float32 Params stay the master copy: AdamW updates them,
//     checkpoints and Host read them;
//   - Half, a bf16 copy of Params (Backend.ToBF16: round to nearest, ties
//     to even, RoundBF16), is made by SetPrecision and remade by Refresh,
//     which the trainer calls after every optimizer step and upload;
//     products read their weights from it;
//   - an activation or gradient is rounded to bf16 (into a scratch buffer)
//     as it enters a product: the layer input in forward and for the
//     weight gradient, the output gradient for both backward products;
//   - Backend.GemmBF16 multiplies bf16 operands into a float32 C.
//
// Activations are stored in float32 between ops, and everything but
// Backend.Gemm stays float32: embedding, RMSNorm, RoPE, attention (its
// q·kᵀ and p·v products included: they are inside the attention ops, not
// Backend.Gemm), SwiGLU, log-softmax, AdamW, norms and sampling. bf16
// storage of activations would halve their memory and traffic but needs
// bf16 variants of every kernel; it is not done.
//
// The CPU backend implements the same semantics as the reference: a bf16
// buffer (HostBF16) holds float32 values that are exactly bf16, and
// GemmBF16 runs the float32 GEMM on them, which is a bf16-input,
// float32-accumulate product (products of bf16 values are exact in
// float32). A bf16 Transformer there is bit-identical to the f32 one on a
// backend whose Gemm rounds its inputs, and within 2e-2 of f32 (measured
// on a 2-layer small preset: log-probs 3e-4, gradients 8e-3 relative).
// "cpu" itself trains on model.Model, float32 only, so bf16 runs on
// "cpu-ref" or "cuda". On CUDA, Half and the scratch are bf16 device
// arrays (2 bytes a value), f32_to_bf16 rounds, and GemmBF16 is
// cublasGemmEx with CUDA_R_16BF inputs, a CUDA_R_32F output and
// CUBLAS_COMPUTE_32F; attention keeps cublasSgemmStridedBatched in
// float32.
//
// # Status
//
// Without a GPU, CI builds and vets everything with -tags cuda against the
// headers of Debian's nvidia-cuda-dev (scripts/cuda-check), checks the
// names the loader binds against its link stubs, compiles kernels.cu with
// the real NVRTC (11.8, found by the loader), and runs the CUDA tests,
// where the parity tests skip saying that no driver or device was found. The CPU implementation, Transformer (both heads), AdamW and
// Decoder are tested here against model.Model, model.Decoder and
// optim.AdamW, and the trainer's device path ("cpu-ref") against its host
// path: a short training run gives bit-identical metrics and weights. The
// trainer and rollouts run on any backend, "cuda" included, at f32 or
// bf16. The CUDA kernels themselves have not yet run on a device:
// scripts/gpu-check runs the parity tests (every op, sampling, bf16
// rounding, a whole training step of the tiny and small presets, the
// critic, multi-turn decoding; relative error ≤ 1e-3; and at bf16 the
// bf16 GEMM and a training step with decoding after Refresh against the
// CPU's bf16, ≤ 2e-2), the benchmarks at f32 and bf16, and a short
// training run with -backend cpu, cuda and cuda -precision bf16, timed, on
// a GPU, from binaries built elsewhere (scripts/gpu-check build, then run
// on the GPU machine: no Go there).
package backend
