//go:build !amd64.v3

package vmath

// fmaSwitchable: GODEBUG=cpu.fma=off turns math.Exp's FMA sequence off
// (below GOAMD64=v3, where FMA is not assumed).
const fmaSwitchable = true
