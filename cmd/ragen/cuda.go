//go:build cuda

package main

// A binary built with -tags cuda registers the CUDA backend.
import _ "github.com/ragen-go/ragen/engine/backend/cuda"
