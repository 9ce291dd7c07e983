//go:build !amd64

package vmath

// block and vectorLoop: the vector loops exist on amd64 only.
var (
	block      = 8
	vectorLoop func(x *float64, n int) int
)
