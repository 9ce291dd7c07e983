//go:build !unix

package main

import "os"

// stderrCopy is os.Stderr where fds cannot be duplicated.
func stderrCopy() *os.File { return os.Stderr }
