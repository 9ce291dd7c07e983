package main

import (
	"testing"

	"github.com/ragen-go/ragen/internal/avotest"
)

// TestCheckedInFilesAreCurrent regenerates the assembly and compares it
// with the files checked in beside package vmath.
func TestCheckedInFilesAreCurrent(t *testing.T) {
	avotest.CheckCurrent(t, main, "vmath", "../..", "exp_amd64.s", "exp_amd64_stub.go",
		"go generate ./engine/vmath")
}
