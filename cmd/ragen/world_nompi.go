//go:build !mpi

package main

import "github.com/ragen-go/ragen/engine/dist"

// mpiWorld is MPI's world communicator; nil in a build without the mpi
// tag (see world_mpi.go).
func mpiWorld() (dist.Comm, func() error, error) { return nil, func() error { return nil }, nil }
