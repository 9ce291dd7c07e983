//go:build cuda

package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/ragen-go/ragen/engine/backend/cuda"
	"github.com/ragen-go/ragen/engine/dist"
	"github.com/ragen-go/ragen/engine/dist/nccl"
)

// world is the run's communicator in the cuda build. With -backend cuda
// the ranks sum over NCCL, one GPU each (decision 43): in a build with
// the mpi tag too, on MPI's world (the id shared over MPI), else on the
// launcher's (mpirun, srun or torchrun, read from its environment; rank 0
// hands out the id over TCP at MASTER_ADDR:MASTER_PORT). A process that
// no launcher started, in a build without MPI, is one process with the
// default update. With another backend it is the non-cuda build's world.
func world(backend string) (dist.Comm, func() error, error) {
	boot, finalize, err := mpiWorld()
	if err != nil || backend != "cuda" {
		return boot, finalize, err
	}
	l, launched, err := nccl.FromEnv(os.Getenv)
	if err == nil && boot == nil && !launched {
		return nil, finalize, nil
	}
	var c *cuda.NCCL
	if err == nil {
		c, err = nccl.New(l, boot)
	}
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("data-parallel run over NCCL: %w", err), finalize())
	}
	return c, func() error { return errors.Join(c.Close(), finalize()) }, nil
}
