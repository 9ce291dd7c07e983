//go:build unix

package kernel

import (
	"os"
	"syscall"
)

// stderrCopy is a duplicate of fd 2, so the kernel's log is not captured
// as cell output while a cell runs (the session points fd 2 at a pipe).
func stderrCopy() *os.File {
	if fd, err := syscall.Dup(2); err == nil {
		return os.NewFile(uintptr(fd), "stderr")
	}
	return os.Stderr
}
