//go:build mpi

package main

import (
	"github.com/ragen-go/ragen/engine/dist"
	"github.com/ragen-go/ragen/engine/dist/mpi"
)

// mpiWorld is MPI's world communicator in the mpi build (go build -tags
// mpi): under mpirun each process is a rank of one data-parallel run, and
// alone it is rank 0 of 1, whose numbers are those of any world size
// (decision 41). The function returned finalizes MPI.
func mpiWorld() (dist.Comm, func() error, error) {
	c, err := mpi.Init()
	if err != nil {
		return nil, nil, err
	}
	return c, mpi.Finalize, nil
}
