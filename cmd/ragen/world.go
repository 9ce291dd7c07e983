//go:build !cuda

package main

import "github.com/ragen-go/ragen/engine/dist"

// world is the run's communicator: MPI's world in the mpi build, nil (one
// process, the default update) in the default one. See world_cuda.go for
// the cuda build's.
func world(backend string) (dist.Comm, func() error, error) { return mpiWorld() }
