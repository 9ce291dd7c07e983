package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
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
//
// The pool serves one loop at a time: a For that finds it busy — called from
// inside another For's body, or from another goroutine meanwhile — runs its
// chunks serially on the calling goroutine, in chunk order. That never
// deadlocks and gives the same results, since the chunks are the same.
// A panic in a body is re-raised by For on the calling goroutine once the
// other chunks have finished.
func For(n, grain int, body func(chunk, lo, hi int)) {
	if grain < 1 {
		grain = 1
	}
	nc := Chunks(n, grain)
	if nc == 0 {
		return
	}
	helpers := min(runtime.GOMAXPROCS(0), nc) - 1
	if helpers == 0 || !thePool.busy.CompareAndSwap(false, true) {
		for c := 0; c < nc; c++ {
			lo := c * grain
			body(c, lo, min(lo+grain, n))
		}
		return
	}
	defer thePool.busy.Store(false)
	thePool.run(&job{n: n, grain: grain, chunks: int64(nc), body: body}, helpers)
}

// spinFor is how long an idle worker keeps polling for the next loop before
// it parks. Loops in a training step follow each other within microseconds;
// waking a parked goroutine on an idle core costs 20–100 µs on the target
// machines, so a worker that spins through the gap saves that each time.
const spinFor = 50 * time.Microsecond

// job is one For call. Chunks are handed out by an atomic counter, so each
// runs exactly once whichever goroutine takes it.
type job struct {
	n, grain int
	chunks   int64
	body     func(chunk, lo, hi int)
	next     atomic.Int64 // next chunk to hand out
	done     atomic.Int64 // chunks finished
	panicked atomic.Pointer[panicValue]
}

type panicValue struct{ v any }

// work runs chunks until none are left.
func (j *job) work() {
	for {
		c := j.next.Add(1) - 1
		if c >= j.chunks {
			return
		}
		j.runChunk(int(c))
	}
}

func (j *job) runChunk(c int) {
	defer func() {
		if r := recover(); r != nil {
			j.panicked.CompareAndSwap(nil, &panicValue{r})
		}
		j.done.Add(1)
	}()
	lo := c * j.grain
	j.body(c, lo, min(lo+j.grain, j.n))
}

// pool is the set of persistent workers. A loop is published by storing it
// in current and bumping gen; workers that are spinning see gen change,
// parked ones are woken through their channel.
type pool struct {
	busy    atomic.Bool // a For owns the pool
	gen     atomic.Uint64
	current atomic.Pointer[job]

	mu      sync.Mutex // guards workers (grown on demand)
	workers []*worker
}

type worker struct {
	parked atomic.Bool
	wake   chan struct{} // capacity 1: one pending wake-up
}

var thePool pool

func (p *pool) run(j *job, helpers int) {
	p.mu.Lock()
	for len(p.workers) < helpers {
		w := &worker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go p.loop(w, p.gen.Load())
	}
	ws := p.workers[:helpers]
	p.mu.Unlock()

	p.current.Store(j)
	p.gen.Add(1)
	for _, w := range ws {
		if w.parked.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
	j.work()
	// Wait for chunks other workers took; they are already running.
	for spins := 0; j.done.Load() < j.chunks; spins++ {
		if spins > 100 {
			runtime.Gosched()
		}
	}
	p.current.Store(nil) // drop the closure so it can be collected
	if pv := j.panicked.Load(); pv != nil {
		panic(pv.v)
	}
}

// loop is one worker: wait for a new generation, help with its job, repeat.
func (p *pool) loop(w *worker, seen uint64) {
	for {
		seen = p.await(w, seen)
		if j := p.current.Load(); j != nil {
			j.work()
		}
	}
}

// await returns the next generation after seen: it spins for spinFor, then
// parks. The parked flag is set before gen is re-checked and For bumps gen
// before it looks at the flag, so a wake-up is never lost.
func (p *pool) await(w *worker, seen uint64) uint64 {
	start := time.Now()
	for spins := 0; ; spins++ {
		if g := p.gen.Load(); g != seen {
			return g
		}
		if spins%64 == 63 {
			if time.Since(start) > spinFor {
				break
			}
			runtime.Gosched() // let other goroutines of this P run
		}
	}
	for {
		w.parked.Store(true)
		if g := p.gen.Load(); g != seen {
			if !w.parked.CompareAndSwap(true, false) {
				<-w.wake // For saw the flag and sent a wake-up: consume it
			}
			return g
		}
		<-w.wake
		if g := p.gen.Load(); g != seen {
			return g
		}
	}
}
