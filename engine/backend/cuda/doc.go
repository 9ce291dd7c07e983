//go:build cuda

// Package cuda is the CUDA backend of the engine (build tag cuda): a
// context and one stream per Backend, device buffers, the kernels of
// kernels.cu (embedded, compiled at start by NVRTC for the device's
// compute capability, loaded as a module), and cuBLAS for every matrix
// product (strided-batched for the heads of attention; GemmEx on bf16
// operands at precision bf16). The driver, cuBLAS and NVRTC are opened at
// run time with dlopen (loader.go, dl.h): one binary, built against CUDA
// 11.8's headers, runs with CUDA 11, 12 or 13 libraries from a toolkit or
// from Python's NVIDIA wheels, and Libraries says which it loaded.
// Importing the package registers it as backend "cuda". The design and its
// status are in engine/backend's package doc.
package cuda
