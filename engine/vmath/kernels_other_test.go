//go:build !amd64

package vmath

func vectorKernels() []kernel { return nil }

// expectedPath: elsewhere math.Exp is another algorithm (arm64, s390x,
// loong64 assembly, or the portable Go), which Exp calls.
func expectedPath(bool) int { return viaMath }
