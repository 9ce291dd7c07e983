package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkCover runs For and checks that every chunk ran exactly once with the
// right bounds.
func checkCover(t *testing.T, n, grain int) {
	t.Helper()
	nc := Chunks(n, grain)
	runs := make([]atomic.Int32, nc)
	var items atomic.Int64
	For(n, grain, func(chunk, lo, hi int) {
		runs[chunk].Add(1)
		g := max(grain, 1)
		if lo != chunk*g || hi != min(lo+g, n) {
			t.Errorf("n=%d grain=%d: chunk %d got [%d,%d)", n, grain, chunk, lo, hi)
		}
		items.Add(int64(hi - lo))
	})
	for c := range runs {
		if r := runs[c].Load(); r != 1 {
			t.Fatalf("n=%d grain=%d: chunk %d ran %d times", n, grain, c, r)
		}
	}
	if items.Load() != int64(n) {
		t.Fatalf("n=%d grain=%d: covered %d items", n, grain, items.Load())
	}
}

func TestForRunsEveryChunkOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		prev := runtime.GOMAXPROCS(procs)
		for _, s := range [][2]int{{0, 1}, {1, 1}, {5, 0}, {10, 3}, {1000, 7}, {64, 64}, {100000, 1}} {
			checkCover(t, s[0], s[1])
		}
		runtime.GOMAXPROCS(prev)
	}
}

// TestForNested: a For inside a For body runs inline and completes.
func TestForNested(t *testing.T) {
	var total atomic.Int64
	done := make(chan struct{})
	go func() {
		For(8, 1, func(_, _, _ int) {
			For(100, 10, func(_, lo, hi int) { total.Add(int64(hi - lo)) })
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("nested For deadlocked")
	}
	if total.Load() != 800 {
		t.Fatalf("nested For covered %d items, want 800", total.Load())
	}
}

// TestForConcurrentCallers: many goroutines calling For at once all finish
// with every chunk run once.
func TestForConcurrentCallers(t *testing.T) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	var bad atomic.Int32
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := 0; it < 200; it++ {
				var sum atomic.Int64
				For(50, 3, func(_, lo, hi int) {
					for i := lo; i < hi; i++ {
						sum.Add(int64(i))
					}
				})
				if sum.Load() != 50*49/2 {
					bad.Add(1)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("concurrent For calls deadlocked")
	}
	if bad.Load() != 0 {
		t.Fatalf("%d loops summed wrong", bad.Load())
	}
}

// TestForAfterIdle: workers that parked are woken by the next loop.
func TestForAfterIdle(t *testing.T) {
	checkCover(t, 100, 1)
	time.Sleep(5 * spinFor)
	checkCover(t, 100, 1)
}

// TestForSerialWhenStarved: when the chunks of the sampled parallel loops
// got less than minShare of a core, For runs its chunks in order on the
// caller for serialFor; loops the other workers did not take part in are
// not sampled, and chunks that had their cores do not switch.
func TestForSerialWhenStarved(t *testing.T) {
	if _, ok := threadCPUTime(); !ok {
		t.Skip("no thread CPU clock here")
	}
	var s cpuSample
	var until atomic.Int64
	for i := 0; i < 2*sampleLoops; i++ { // the others took no part: no verdict
		s.add(0, 4, 0, 1000, &until)
	}
	if until.Load() != 0 || s.loops != 0 {
		t.Fatalf("loops without the other workers were sampled (%d)", s.loops)
	}
	for i := 0; i < sampleLoops; i++ { // each chunk had 90% of a core
		s.add(2, 4, 180_000, 200_000, &until)
	}
	if until.Load() != 0 {
		t.Fatal("switched to serial loops although the chunks had their cores")
	}
	for i := 0; i < sampleLoops; i++ { // two threads on one core
		s.add(2, 4, 100_000, 200_000, &until)
	}
	if until.Load() <= time.Now().UnixNano() {
		t.Fatal("no switch to serial loops after chunks with half a core")
	}

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	thePool.serialUntil.Store(until.Load())
	defer thePool.serialUntil.Store(0)
	var order []int // appended without a lock: the chunks must run on this goroutine, in order
	For(50, 1, func(chunk, _, _ int) { order = append(order, chunk) })
	if len(order) != 50 {
		t.Fatalf("serial loop ran %d chunks, want 50", len(order))
	}
	for i, c := range order {
		if c != i {
			t.Fatalf("serial loop ran chunk %d at place %d", c, i)
		}
	}
}

func TestForPanicPropagates(t *testing.T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want boom", r)
		}
		checkCover(t, 10, 1) // the pool is usable again
	}()
	For(10, 1, func(chunk, _, _ int) {
		if chunk == 7 {
			panic("boom")
		}
	})
}

// BenchmarkForOverhead is the round trip of a For whose chunks do nothing:
// the cost of starting and joining a parallel loop.
func BenchmarkForOverhead(b *testing.B) {
	var sink atomic.Int64
	for b.Loop() {
		For(2, 1, func(chunk, _, _ int) { sink.Add(int64(chunk)) })
	}
}

// BenchmarkGoroutinesOverhead is the same with fresh goroutines and a
// WaitGroup, the cost the pool avoids.
func BenchmarkGoroutinesOverhead(b *testing.B) {
	var sink atomic.Int64
	for b.Loop() {
		var wg sync.WaitGroup
		for c := 0; c < 2; c++ {
			wg.Add(1)
			go func() { sink.Add(int64(c)); wg.Done() }()
		}
		wg.Wait()
	}
}

// spinWork is a fixed amount of arithmetic on the calling goroutine.
func spinWork(iters int) float64 {
	x := 1.0
	for i := 0; i < iters; i++ {
		x = x*1.0000001 + 1e-9
	}
	return x
}

// BenchmarkForWork: two chunks of w units of arithmetic each, after w
// units of serial work, as between the parallel loops of a training step
// (a unit is about 1.3 ns on a 3 GHz core: w = 16384 is ~20 µs). On two
// cores the ideal time per op is two units (serial part + both chunks at
// once) against three on one core; a pool that pays a goroutine wake-up per
// loop is slower than that by the wake-up.
func BenchmarkForWork(b *testing.B) {
	const w = 16384
	var sink atomic.Uint64
	for b.Loop() {
		spinWork(w)
		For(2, 1, func(_, _, _ int) { sink.Add(uint64(spinWork(w))) })
	}
}

// BenchmarkSerialWork is BenchmarkForWork's three units on one goroutine.
func BenchmarkSerialWork(b *testing.B) {
	const w = 16384
	var sink uint64
	for b.Loop() {
		sink += uint64(spinWork(3 * w))
	}
	_ = sink
}

// TestThreadCPUTime: the thread clock sees tens of µs of work on the
// running thread, exactly enough that a sampled loop's short chunks are
// measured (a process clock read at scheduler ticks would see none), and
// never more time than passed.
func TestThreadCPUTime(t *testing.T) {
	if _, ok := threadCPUTime(); !ok {
		t.Skip("no thread CPU clock here")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	seen := 0
	const trials = 100
	for i := 0; i < trials; i++ {
		c0, _ := threadCPUTime()
		w0 := time.Now()
		spinWork(20000) // ~30 µs
		c1, _ := threadCPUTime()
		wall := time.Since(w0)
		if d := time.Duration(c1 - c0); d > wall+time.Millisecond/10 {
			t.Fatalf("thread CPU time %v over %v of wall time", d, wall)
		} else if d > 0 {
			seen++
		}
	}
	if seen < trials*9/10 {
		t.Fatalf("the thread clock saw the work in %d of %d trials of ~30 µs", seen, trials)
	}
}
