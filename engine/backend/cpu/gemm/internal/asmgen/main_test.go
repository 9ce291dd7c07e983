package main

import (
	"testing"

	"github.com/ragen-go/ragen/internal/avotest"
)

// TestCheckedInFilesAreCurrent regenerates the kernel and compares it with
// the files checked in beside package gemm.
func TestCheckedInFilesAreCurrent(t *testing.T) {
	avotest.CheckCurrent(t, main, "gemm", "../..", "kernel_amd64.s", "kernel_amd64_stub.go",
		"go generate ./engine/backend/cpu/gemm")
}
