//go:build !unix

package kernel

import "os"

// stderrCopy is stderr: without unix fds the session does not capture it.
func stderrCopy() *os.File { return os.Stderr }
