// Package nccl sets up the dist.Comm of a data-parallel run on GPUs: one
// process per GPU, launched by mpirun, srun or torchrun, summing over NCCL
// (decision 43). The communicator itself is engine/backend/cuda's NCCL,
// which opens libnccl.so.2 at run time like the other CUDA libraries;
// this package finds the process's place in the run and hands every rank
// the communicator's id.
//
// Launch reads the rank, the world's size and the rank's index on its
// machine from the launcher's environment (OpenMPI, MPICH, Slurm's srun,
// torchrun). Each process takes GPU local % (GPUs it sees). Rank 0 makes
// the NCCL id; the others get it over MPI when the binary is built with
// the `mpi` tag too, else from rank 0 over TCP at MASTER_ADDR:MASTER_PORT
// (torchrun's names: ShareID), and a run of one process exchanges nothing.
//
// Launch and ShareID are plain Go, built and tested everywhere; New needs
// the `cuda` build tag.
package nccl
