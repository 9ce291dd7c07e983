// Package parallel runs loops on a persistent pool of worker goroutines.
//
// Determinism rule for every caller: the partition of [0, n) into chunks
// depends on n and the grain only, never on GOMAXPROCS or on which worker
// runs a chunk. A loop body must write disjoint outputs per index; a
// reduction keeps one partial per chunk and combines the partials in chunk
// order afterwards (see Chunks). Then results are bit-identical whatever the
// number of cores.
package parallel

import (
	"runtime"
	"sync"
)

// Chunks returns the number of chunks For splits n items into at the given
// grain (items per chunk, ≥ 1): ceil(n / grain).
func Chunks(n, grain int) int {
	if grain < 1 {
		grain = 1
	}
	return (n + grain - 1) / grain
}

// For calls body(chunk, lo, hi) for each chunk of [0, n) of size grain (the
// last one may be shorter). Chunks run concurrently on the pool; For returns
// when all are done. Chunk boundaries depend on n and grain only.
// A body must not call For itself (use a serial loop inside).
func For(n, grain int, body func(chunk, lo, hi int)) {
	if grain < 1 {
		grain = 1
	}
	nc := Chunks(n, grain)
	if nc == 0 {
		return
	}
	workers := runtime.GOMAXPROCS(0)
	if nc == 1 || workers == 1 {
		for c := 0; c < nc; c++ {
			lo := c * grain
			body(c, lo, min(lo+grain, n))
		}
		return
	}
	pool.run(nc, workers, func(c int) {
		lo := c * grain
		body(c, lo, min(lo+grain, n))
	})
}

// The pool: workers started once and kept; each job hands out chunk indices
// from a shared counter, and the caller works too.
type workerPool struct {
	mu      sync.Mutex
	started int
	jobs    chan *job
}

type job struct {
	next sync.Mutex
	i, n int
	fn   func(int)
	wg   sync.WaitGroup
}

func (j *job) take() (int, bool) {
	j.next.Lock()
	defer j.next.Unlock()
	if j.i >= j.n {
		return 0, false
	}
	c := j.i
	j.i++
	return c, true
}

func (j *job) work() {
	for {
		c, ok := j.take()
		if !ok {
			return
		}
		j.fn(c)
	}
}

var pool = &workerPool{jobs: make(chan *job, 64)}

func (p *workerPool) run(nc, workers int, fn func(int)) {
	helpers := min(workers, nc) - 1
	p.mu.Lock()
	for p.started < helpers {
		p.started++
		go func() {
			for j := range p.jobs {
				j.work()
				j.wg.Done()
			}
		}()
	}
	p.mu.Unlock()
	j := &job{n: nc, fn: fn}
	j.wg.Add(helpers)
	for i := 0; i < helpers; i++ {
		p.jobs <- j
	}
	j.work()
	j.wg.Wait()
}
