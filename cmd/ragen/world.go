//go:build !mpi

package main

import "github.com/ragen-go/ragen/engine/dist"

// world is the run's communicator: nil (one process, the default update)
// in the default build; see world_mpi.go for the mpi build's.
func world() (dist.Comm, func() error, error) { return nil, func() error { return nil }, nil }
