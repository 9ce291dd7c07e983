//go:build cuda

// Package cuda is the CUDA backend of the engine (build tag cuda), on
// gorgonia.org/cu: a context and one stream per Backend, device buffers,
// the kernels of kernels.cu (embedded, compiled at start by NVRTC for the
// device's compute capability, loaded as a module), and cuBLAS for every
// matrix product (strided-batched for the heads of attention; GemmEx on
// bf16 operands at precision bf16). Importing
// the package registers it as backend "cuda". The design and its status
// are in engine/backend's package doc.
package cuda
