// Package backend is the compute interface of the engine and the registry
// of its implementations. It holds the interface, its buffers and cache
// types, registration (Register, Check, Open) and the precision setting;
// it imports no model, optimizer or CPU code.
//
// A Backend owns buffers (host memory for "cpu", device memory for
// "cuda") and runs the transformer's ops on them: embedding gather and
// scatter-add, RMSNorm, RoPE, causal grouped-query attention over packed
// sequences, SwiGLU, log-softmax with target gather and entropy, each with
// its backward; GEMM in the three layouts of a linear layer, at float32 or
// on bfloat16 inputs; AdamW; a deterministic gradient norm; sampling with
// temperature, top-k and top-p; and decoding's ops: a KV cache in the
// backend's own layout (NewKVCache), one fused attention step over it
// (DecodeAttention: bias, RoPE, cache append, attend) and SwiGLU on a
// fused gate|up product. Token ids, positions, sequence lengths and
// targets stay host []int, since the host is where they come from.
//
// engine/model, the one transformer of the engine — forward, backward,
// KV-cache decoding, generation, value head, attention maps, bf16
// products — is written once against this interface, and engine/optim
// drives the AdamW and gradient-norm ops; the same model code runs on
// every backend (decision 32). A backend may implement the optional
// Packer (products by weights packed once, which the decoder uses when it
// is there, plain Gemms otherwise) and HostMemory (buffers that wrap host
// slices without a copy, so a model's host parameters are the memory the
// backend computes on).
//
// # Selecting a backend
//
// Implementations register from init: engine/backend/cpu as "cpu" (the
// default; engine/model imports it), and engine/backend/cuda as "cuda"
// when the binary is built with -tags cuda and imports it (cmd/ragen
// does). Check(name) says whether a backend can run here, with the reason
// when not: "cuda" in a build without the tag says how to rebuild, and
// with the tag but no device or driver says what is missing. Open(name)
// returns an instance; model.Model.Use moves a model onto it. The
// trainer's config field `backend` (flag -backend) goes through Check.
//
// # Errors
//
// Ops return nothing: a device backend queues them asynchronously. The
// first failure sticks (Err) and is returned by every call that brings data
// back to the host (Download, GradNorm, Sample), after which ops do nothing,
// as bufio.Writer does. Bad sizes are caught on the host before a kernel
// could write out of bounds.
//
// # Conformance
//
// engine/backend/backendtest is the suite every backend passes: each op
// against its float64 twin in backendtest.Naive at several shapes
// (ragged packed sequences, GQA, QKV bias, long positions), a training
// step of a policy with tied and untied heads, a critic and a reference,
// and a multi-turn decode with sampling, at f32 and bf16. The CPU runs it
// in `go test ./...`, CUDA in scripts/gpu-check.
//
// # Mixed precision
//
// A model at BF16 (model.Model.Use; the trainer's `precision: bf16`, flag
// -precision) makes every matrix product read bfloat16 inputs and
// accumulate in float32 (decision 20):
//
//   - the float32 parameters stay the master copy: AdamW updates them,
//     checkpoints read them;
//   - a bf16 copy of them (Backend.ToBF16: round to nearest, ties to
//     even, RoundBF16) is made by Use and remade by Refresh, which the
//     optimizer step and Upload call; products read their weights from it;
//   - an activation or gradient is rounded to bf16 (into a scratch buffer)
//     as it enters a product: the layer input in forward and for the
//     weight gradient, the output gradient for both backward products;
//   - Backend.GemmBF16 (or a Packer's product of packed bf16 weights)
//     multiplies bf16 operands into a float32 C.
//
// Activations are stored in float32 between ops, and everything but the
// products stays float32: embedding, RMSNorm, RoPE, attention (its q·kᵀ
// and p·v products included), SwiGLU, log-softmax, AdamW, norms and
// sampling. The CPU backend stores a bf16 buffer in two bytes a value
// (cpu.HostBF16) and widens the values to float32 as its GEMM reads them,
// which is exact, so its products are bf16-input, float32-accumulate ones
// with the bits of its float32 GEMM on the widened values (products of
// bf16 values are exact in float32). A Packer may keep packed weights as
// bf16 when every value is one, also of float32 weights, as the CPU does
// (decision 44). On CUDA, bf16 buffers are bf16 device
// arrays (2 bytes a value), f32_to_bf16 rounds, and GemmBF16 is
// cublasGemmEx with CUDA_R_16BF inputs, a CUDA_R_32F output and
// CUBLAS_COMPUTE_32F.
//
// # The CUDA backend
//
// engine/backend/cuda binds the CUDA driver API (context, one non-blocking
// stream per Backend, device memory, module loading, kernel launch),
// cuBLAS and NVRTC with cgo through function pointers: libcuda.so.1, the
// newest libcublas and libnvrtc are opened with dlopen on first use (from
// the loader's path, a toolkit, or Python's NVIDIA wheels), so one binary
// runs with CUDA 11, 12 or 13, and one on a machine without a driver says
// what it looked for. gorgonia.org/cu is not used (docs/decisions.md, 33).
// NVRTC compiles kernels.cu, embedded with go:embed, at start for the
// device's compute capability (falling back to an older PTX target when
// NVRTC predates the device). Matrix products go to
// cublasSgemm (row-major by computing the transposed product), attention
// to cublasSgemmStridedBatched over the query heads of each key/value
// group (stride 0 shares K and V), with a fused scale+mask+softmax kernel
// between the two products. Reductions use a fixed block size and tree;
// sums over rows (weight gradients, embedding scatter-add) run one thread
// per column over the rows in order, with no atomics, so results are the
// same on every run (not bit-equal to the CPU). TF32 is off.
//
// Without a GPU, CI vets and builds it with -tags cuda against the
// headers of Debian's nvidia-cuda-dev (scripts/cuda-check), compiles
// kernels.cu with the real NVRTC, and runs its tests, where the
// conformance suite skips saying that no device was found.
// scripts/gpu-check builds the test binaries and the ragen binary here
// and runs them on a GPU machine.
package backend
