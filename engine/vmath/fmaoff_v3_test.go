//go:build amd64.v3

package vmath

// fmaSwitchable: at GOAMD64=v3 and above FMA is assumed and GODEBUG cannot
// turn it off, so TestSequences cannot check the plain sequence.
const fmaSwitchable = false
