package main

import (
	"testing"

	"github.com/ragen-go/ragen/internal/avotest"
)

// TestCheckedInFilesAreCurrent regenerates the assembly and compares it
// with the files checked in beside package cpu.
func TestCheckedInFilesAreCurrent(t *testing.T) {
	avotest.CheckCurrent(t, main, "cpu", "../..", "asm_amd64.s", "asm_amd64_stub.go",
		"go generate ./engine/backend/cpu")
}
