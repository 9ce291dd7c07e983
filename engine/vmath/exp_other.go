//go:build !amd64

package vmath

// vec: the vector loops exist on amd64 only.
var vec vectorLoops
