//go:build unix

package main

import (
	"os"
	"syscall"
)

// stderrCopy is a duplicate of fd 2: the session redirects fd 2 into the
// running cell's output, and progress must reach the terminal.
func stderrCopy() *os.File {
	if fd, err := syscall.Dup(2); err == nil {
		return os.NewFile(uintptr(fd), "stderr")
	}
	return os.Stderr
}
