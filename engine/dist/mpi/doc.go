// Package mpi is dist.Comm over MPI's world communicator, through cgo and
// the system's libmpi (Debian: openmpi-bin libopenmpi-dev). It is built
// only with the `mpi` build tag; without it the package is empty and the
// default build needs neither cgo nor MPI:
//
//	go build -tags mpi -o ragen-mpi ./cmd/ragen
//	mpirun -np 2 ./ragen-mpi train ...
//
// Init calls MPI_Init once and reads the rank and size of
// MPI_COMM_WORLD; Finalize ends MPI. Collectives must be called from one
// goroutine at a time (MPI_THREAD_SERIALIZED).
package mpi
