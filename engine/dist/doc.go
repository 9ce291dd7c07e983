// Package dist is what a data-parallel run needs from its processes: its
// rank and the world's size, sums of buffers over every rank (all-reduce),
// the gathering of every rank's bytes (all-gather) and a barrier.
//
// Single is the one-process default. Local connects n communicators inside
// one process (goroutines), for tests. The MPI implementation (package
// engine/dist/mpi, built only with the `mpi` build tag, cgo and libmpi)
// runs under mpirun or srun; the NCCL one, for GPU ranks, is
// engine/backend/cuda's NCCL, set up by engine/dist/nccl (the `cuda` tag,
// libnccl.so.2 opened at run time). The default build needs neither cgo,
// MPI nor NCCL.
//
// Exact sums: floating-point sums depend on their order, and the order of
// an MPI reduction depends on the number of ranks. Fixed holds float32
// values as fixed-point integers (three 32-bit limbs in int64s, 2⁻⁶⁴ to
// 2³¹), whose sums are exact and so independent of order: a gradient
// summed from per-trajectory parts through Fixed is the same bits on one
// rank or on eight.
package dist
