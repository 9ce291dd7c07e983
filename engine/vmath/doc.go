// Package vmath computes functions of package math over slices, giving
// every element the bits package math gives it in the same process, with
// vector instructions where it can. Go does not vectorise, and a call of
// math.Exp per element costs a decoding step's sampler more than everything
// else it does over the vocabulary (decision 47); the numbers of a run
// must not change with it (decision 30).
//
// Exp is math.Exp over a slice, in place; ExpShifted is math.Exp of
// float64(x[i]) − m over float32s x, the numerators of a softmax, read
// without a float64 copy. Both run math.Exp's algorithm (the one of Go's
// src/math/exp_amd64.s) in Go twins and in AVX2 and AVX-512 loops generated
// by internal/asmgen, with math.Exp itself for the inputs outside the
// algorithm's main range and on other architectures.
package vmath
