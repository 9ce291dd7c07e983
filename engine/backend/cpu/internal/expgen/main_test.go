package main

import (
	"testing"

	"github.com/ragen-go/ragen/internal/avotest"
)

// TestCheckedInFilesAreCurrent regenerates the exp kernel and compares it
// with the files checked in beside package cpu.
func TestCheckedInFilesAreCurrent(t *testing.T) {
	avotest.CheckCurrent(t, main, "cpu", "../..", "exp_amd64.s", "exp_amd64_stub.go",
		"go generate ./engine/backend/cpu")
}
