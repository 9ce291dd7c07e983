//go:build cuda

package nccl

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/ragen-go/ragen/engine/backend/cuda"
	"github.com/ragen-go/ragen/engine/dist"
)

// Timeout bounds the rendezvous: how long rank 0 waits for the others to
// ask for the id, and they for rank 0 to answer.
const Timeout = 5 * time.Minute

// New makes this process's rank of the run's NCCL communicator, on GPU
// l.Local % (the GPUs it sees), and makes the cuda backend use that GPU.
// With boot (MPI's world communicator, in a binary built with the mpi tag
// too) rank and size are boot's and the id travels over it; without,
// they are l's and the id goes over TCP from rank 0 at MASTER_ADDR and
// MASTER_PORT (ShareID), unless the run has one process.
func New(l Launch, boot dist.Comm) (*cuda.NCCL, error) {
	if boot != nil {
		l.Rank, l.Size = boot.Rank(), boot.Size()
	}
	n, err := cuda.Devices()
	if err != nil {
		return nil, fmt.Errorf("nccl: backend cuda: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("nccl: backend cuda: no CUDA device found")
	}
	dev := l.Local % n
	var id []byte
	if l.Rank == 0 {
		if id, err = cuda.NCCLUniqueID(); err != nil {
			return nil, fmt.Errorf("nccl: %w", err)
		}
	}
	switch {
	case boot != nil:
		all, err := boot.AllGather(id) // rank 0's share is the id, the others' empty
		if err != nil {
			return nil, fmt.Errorf("nccl: sharing the id over MPI: %w", err)
		}
		id = all[0]
	case l.Size > 1:
		host, port := os.Getenv("MASTER_ADDR"), os.Getenv("MASTER_PORT")
		if host == "" || port == "" {
			return nil, fmt.Errorf("nccl: a run of %d processes without MPI needs MASTER_ADDR and MASTER_PORT (rank 0's host and a free port there, as for torchrun), e.g. under Slurm: export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1) MASTER_PORT=29500", l.Size)
		}
		if id, err = ShareID(id, l.Rank, l.Size, net.JoinHostPort(host, port), Timeout); err != nil {
			return nil, fmt.Errorf("nccl: %w", err)
		}
	}
	c, err := cuda.NewNCCL(dev, l.Rank, l.Size, id)
	if err != nil {
		return nil, err
	}
	cuda.UseDevice(dev)
	return c, nil
}
