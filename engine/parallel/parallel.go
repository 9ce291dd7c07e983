package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
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
// deadlocks and gives the same results, since the chunks are the same. For
// also runs serially for a while when the process has not been getting the
// CPU time of a second core (see cpuSample).
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
	if helpers == 0 || thePool.starved() || !thePool.busy.CompareAndSwap(false, true) {
		for c := 0; c < nc; c++ {
			lo := c * grain
			body(c, lo, min(lo+grain, n))
		}
		return
	}
	defer thePool.busy.Store(false)
	thePool.run(&job{n: n, grain: grain, chunks: int64(nc), body: body, finished: make(chan struct{}, 1)}, helpers)
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
	// waiting is set by For's caller before it blocks on finished; the
	// goroutine that finishes the last chunk then sends on finished.
	waiting  atomic.Bool
	finished chan struct{}

	// With sampled, each chunk adds the CPU time of the thread that ran it
	// and its wall time (see cpuSample), before it counts as done.
	sampled   bool
	cpu, wall atomic.Int64
}

type panicValue struct{ v any }

// work runs chunks until none are left and returns how many it ran.
func (j *job) work() (ran int) {
	for {
		c := j.next.Add(1) - 1
		if c >= j.chunks {
			return ran
		}
		j.runChunk(int(c))
		ran++
	}
}

func (j *job) runChunk(c int) {
	var cpu0, wall0 int64
	if j.sampled {
		// The thread's clock is read twice: the goroutine must stay on it.
		runtime.LockOSThread()
		cpu0, _ = threadCPUTime()
		wall0 = time.Now().UnixNano()
	}
	defer func() {
		if r := recover(); r != nil {
			j.panicked.CompareAndSwap(nil, &panicValue{r})
		}
		if j.sampled {
			cpu1, _ := threadCPUTime()
			wall1 := time.Now().UnixNano()
			runtime.UnlockOSThread()
			if cpu1 >= cpu0 && wall1 >= wall0 {
				j.cpu.Add(cpu1 - cpu0)
				j.wall.Add(wall1 - wall0)
			}
		}
		if j.done.Add(1) == j.chunks && j.waiting.Load() {
			j.finished <- struct{}{}
		}
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

	// serialUntil (Unix ns): For runs loops serially until then. The
	// sample (see measure) is touched only by the goroutine owning the pool.
	serialUntil atomic.Int64
	sample      cpuSample

	mu      sync.Mutex // guards workers (grown on demand)
	workers []*worker
}

type worker struct {
	parked atomic.Bool
	wake   chan struct{} // capacity 1: one pending wake-up
}

// thePool samples its loops except in tests, which compare GOMAXPROCS=1
// and 2 and so must run the pool's parallel path whatever the machine's load.
// Without a thread CPU clock it never samples either.
var thePool = pool{sample: cpuSample{off: testing.Testing() || !haveThreadClock()}}

// haveThreadClock reports whether threadCPUTime works here.
func haveThreadClock() bool {
	_, ok := threadCPUTime()
	return ok
}

func (p *pool) run(j *job, helpers int) {
	p.mu.Lock()
	for len(p.workers) < helpers {
		w := &worker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go p.loop(w, p.gen.Load())
	}
	ws := p.workers[:helpers]
	p.mu.Unlock()

	j.sampled = p.sample.due()
	p.current.Store(j)
	p.gen.Add(1)
	for _, w := range ws {
		if w.parked.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
	ran := j.work()
	j.wait()
	if j.sampled {
		p.sample.add(int(j.chunks)-ran, int(j.chunks), j.cpu.Load(), j.wall.Load(), &p.serialUntil)
	}
	p.current.Store(nil) // drop the closure so it can be collected
	if pv := j.panicked.Load(); pv != nil {
		panic(pv.v)
	}
}

// Parallel loops pay only when the process gets more than one core. On a
// machine shared with other busy processes it may not: Linux's CFS shares
// the CPU between sessions (autogroups), not threads, so a second thread of
// ours then only takes time from the first, and every loop also waits on
// the slower of the two (`ragen bench` decoded up to 1.5× faster with
// GOMAXPROCS=1 under a load average of 7 on the 2-vCPU machines, the
// process using 1.0 CPU either way). So every sampleEvery the pool samples
// sampleLoops parallel loops in which the other workers took part (at least
// a quarter of the chunks, so a worker still waking up does not count):
// every chunk of such a loop is timed on its thread's CPU clock and on the
// wall clock, and the sum of the one over the sum of the other is the share
// of a core the running chunks got — about 1 when the cores are free, about
// ½ when two threads share one. Below minShare, For runs serially for
// serialFor (the workers park and stop spinning), then samples again.
// Which goroutine runs a chunk never changes the results.
//
// The clocks are the threads' own: the process's clock (getrusage) counts
// another thread's running time only at that thread's next scheduler tick,
// so over loops of tens of µs it missed the helpers' time almost always,
// and an idle machine looked starved (decoding ran serially much of the
// time: 5.0k instead of 7.2k tokens/s for the base model).
const (
	sampleEvery = 50 * time.Millisecond
	sampleLoops = 16
	minShare    = 0.65
	serialFor   = 200 * time.Millisecond
)

// cpuSample accumulates the sampled loops. Only the goroutine owning the
// pool touches it.
type cpuSample struct {
	off       bool  // never sample
	next      int64 // Unix ns: sample the loops from then on
	loops     int
	cpu, wall int64 // sums over the sampled loops' chunks, ns
}

// starved reports whether For should run serially now.
func (p *pool) starved() bool {
	until := p.serialUntil.Load()
	return until != 0 && time.Now().UnixNano() < until
}

// due reports whether the next loop is to be sampled.
func (s *cpuSample) due() bool {
	return !s.off && time.Now().UnixNano() >= s.next
}

// add takes a sampled loop in which others ran helped chunks out of
// chunks, its chunks having had cpu ns of their threads' time over wall
// ns, and when sampleLoops are in, gives the verdict: serialUntil set when
// the chunks got less than minShare of a core.
func (s *cpuSample) add(helped, chunks int, cpu, wall int64, serialUntil *atomic.Int64) {
	if 4*helped < chunks {
		return
	}
	s.cpu += cpu
	s.wall += wall
	if s.loops++; s.loops < sampleLoops {
		return
	}
	now := time.Now().UnixNano()
	s.next = now + int64(sampleEvery)
	if float64(s.cpu) < minShare*float64(s.wall) {
		serialUntil.Store(now + int64(serialFor))
		s.next = now + int64(serialFor)
	}
	s.loops, s.cpu, s.wall = 0, 0, 0
}

// wait returns once every chunk has finished. The chunks other workers
// took are already running, so it spins for spinFor, then blocks: on a
// machine shared with other processes the OS may have preempted a worker in
// the middle of its chunk, and a caller spinning on its core for the rest
// of a time slice would only delay that worker further.
func (j *job) wait() {
	if j.done.Load() == j.chunks {
		return
	}
	start := time.Now()
	for spins := 0; j.done.Load() < j.chunks; spins++ {
		if spins%64 == 63 && time.Since(start) > spinFor {
			// The chunk that finishes last sends once waiting is set: either
			// it sees the flag, or this check sees its count.
			j.waiting.Store(true)
			if j.done.Load() < j.chunks {
				<-j.finished
			}
			return
		}
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
