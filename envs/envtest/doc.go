// Package envtest holds the test helpers every environment package uses:
// golden files with an -update flag, a transcript of a played episode in the
// exact prompt text the agent reads, and a conformance check of the Env and
// Expert contracts.
//
//	go test ./envs/frozenlake -run Golden -update   # rewrite testdata/*.golden
package envtest
