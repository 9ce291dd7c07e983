// Package parallel runs loops on a persistent pool of worker goroutines.
//
// Determinism rule for every caller: the partition of [0, n) into chunks
// depends on n and the grain only, never on GOMAXPROCS or on which worker
// runs a chunk. A loop body must write disjoint outputs per index; a
// reduction keeps one partial per chunk and combines the partials in chunk
// order afterwards (see Chunks). Then results are bit-identical whatever the
// number of cores.
//
// # The pool
//
// Workers are goroutines started on first use (GOMAXPROCS-1 of them; the
// caller of For is the last worker) and kept. A For publishes its loop and
// every worker takes chunks from a shared atomic counter until none are
// left, so each chunk runs exactly once and uneven chunks balance out.
// Between loops a worker spins for spinFor (50 µs) before it parks: waking a
// parked goroutine on an idle core costs 20–100 µs on the 2-vCPU machines
// this project targets, more than many loops of a training step last, while
// loops that follow each other within 50 µs find the worker awake (a For
// round trip then costs well under a microsecond of overhead). The caller,
// once its own chunks are done, likewise spins for spinFor while the
// chunks other workers took finish, then blocks until the last one does:
// on a machine shared with other processes a worker may be descheduled in
// the middle of a chunk, and spinning on would only take CPU time from it.
//
// The pool runs one loop at a time. A For that finds it busy — nested in
// another For's body, or called by another goroutine meanwhile — runs its
// chunks on its own goroutine in order: no deadlock, same results.
package parallel
