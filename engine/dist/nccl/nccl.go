//go:build cuda

package nccl

import (
	"errors"
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
	// Every rank reaches the exchange, failed or not: over MPI a rank that
	// left early would leave the others waiting in the all-gather forever.
	n, err := cuda.Devices()
	if err == nil && n == 0 {
		err = errors.New("no CUDA device found")
	}
	if err != nil {
		err = fmt.Errorf("nccl: backend cuda: %w", err)
	}
	var id []byte
	if l.Rank == 0 && err == nil {
		if id, err = cuda.NCCLUniqueID(); err != nil {
			err = fmt.Errorf("nccl: %w", err)
		}
	}
	switch {
	case boot != nil:
		all, gerr := boot.AllGather(id) // rank 0's share is the id (none if it failed), the others' nothing
		if err != nil {
			return nil, err
		}
		if gerr != nil {
			return nil, fmt.Errorf("nccl: sharing the id over MPI: %w", gerr)
		}
		if len(all[0]) != idBytes {
			return nil, errors.New("nccl: rank 0 could not make the NCCL id (its error says why)")
		}
		id = all[0]
	case err != nil:
		return nil, err
	case l.Size > 1:
		host, port := os.Getenv("MASTER_ADDR"), os.Getenv("MASTER_PORT")
		if host == "" || port == "" {
			return nil, fmt.Errorf("nccl: a run of %d processes without MPI needs MASTER_ADDR and MASTER_PORT (rank 0's host and a free port there, as for torchrun), e.g. under Slurm: export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1) MASTER_PORT=29500", l.Size)
		}
		if id, err = ShareID(id, l.Rank, l.Size, net.JoinHostPort(host, port), Timeout); err != nil {
			return nil, fmt.Errorf("nccl: %w", err)
		}
	}
	dev := l.Local % n
	c, err := cuda.NewNCCL(dev, l.Rank, l.Size, id)
	if err != nil {
		return nil, err
	}
	cuda.UseDevice(dev)
	return c, nil
}
