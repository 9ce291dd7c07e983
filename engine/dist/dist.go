package dist

import (
	"fmt"
	"sync"
)

// Comm is a communicator: a fixed set of processes (ranks 0..Size-1) that
// call each collective operation in the same order with buffers of the
// same length. Every method is collective except Rank and Size.
type Comm interface {
	Rank() int
	Size() int
	// AllReduceInt64 replaces buf on every rank by the element-wise sum of
	// every rank's buf (exact, as long as no sum overflows).
	AllReduceInt64(buf []int64) error
	// AllReduceFloat64 and AllReduceFloat32 sum element-wise; the order of
	// the sum is the implementation's, so the result may differ in its last
	// bits between world sizes (use Fixed for exact sums).
	AllReduceFloat64(buf []float64) error
	AllReduceFloat32(buf []float32) error
	// AllGather returns every rank's data, indexed by rank (data may differ
	// in length between ranks).
	AllGather(data []byte) ([][]byte, error)
	Barrier() error
}

// Single is the communicator of a run on one process: rank 0 of 1, every
// collective a no-op.
type Single struct{}

func (Single) Rank() int                               { return 0 }
func (Single) Size() int                               { return 1 }
func (Single) AllReduceInt64([]int64) error            { return nil }
func (Single) AllReduceFloat64([]float64) error        { return nil }
func (Single) AllReduceFloat32([]float32) error        { return nil }
func (Single) AllGather(data []byte) ([][]byte, error) { return [][]byte{data}, nil }
func (Single) Barrier() error                          { return nil }

// Local returns n communicators connected inside this process, one per
// rank, each to be used by its own goroutine: a world of n ranks without
// MPI, for tests. Reductions sum in rank order.
func Local(n int) []Comm {
	if n < 1 {
		panic(fmt.Sprintf("dist.Local: %d ranks", n))
	}
	w := &world{n: n, slot: make([]any, n)}
	w.cond = sync.NewCond(&w.mu)
	out := make([]Comm, n)
	for r := range out {
		out[r] = &local{w: w, rank: r}
	}
	return out
}

// world is the shared state of Local's ranks: a reusable barrier whose
// slots carry each rank's contribution to the current collective.
type world struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int
	arrived int
	gen     uint64
	slot    []any
	result  []any // the slots of the last completed round
}

// exchange deposits v as rank's contribution and returns every rank's,
// once all have arrived.
func (w *world) exchange(rank int, v any) []any {
	w.mu.Lock()
	defer w.mu.Unlock()
	gen := w.gen
	w.slot[rank] = v
	w.arrived++
	if w.arrived == w.n {
		w.result, w.slot = w.slot, make([]any, w.n)
		w.arrived = 0
		w.gen++
		w.cond.Broadcast()
	} else {
		for gen == w.gen {
			w.cond.Wait()
		}
	}
	return w.result
}

type local struct {
	w    *world
	rank int
}

func (c *local) Rank() int { return c.rank }
func (c *local) Size() int { return c.w.n }

func (c *local) AllReduceInt64(buf []int64) error {
	return reduce(c, buf, func(a, b int64) int64 { return a + b })
}
func (c *local) AllReduceFloat64(buf []float64) error {
	return reduce(c, buf, func(a, b float64) float64 { return a + b })
}
func (c *local) AllReduceFloat32(buf []float32) error {
	return reduce(c, buf, func(a, b float32) float32 { return a + b })
}

func reduce[T any](c *local, buf []T, add func(a, b T) T) error {
	all := c.w.exchange(c.rank, append([]T(nil), buf...))
	for r, v := range all {
		x := v.([]T)
		if len(x) != len(buf) {
			return fmt.Errorf("dist: all-reduce of %d elements on rank %d, %d on rank %d", len(buf), c.rank, len(x), r)
		}
	}
	// Every rank sums in rank order from the same copies: the same bits.
	copy(buf, all[0].([]T))
	for _, v := range all[1:] {
		for i, x := range v.([]T) {
			buf[i] = add(buf[i], x)
		}
	}
	c.w.exchange(c.rank, nil) // nobody reads the copies after this
	return nil
}

func (c *local) AllGather(data []byte) ([][]byte, error) {
	all := c.w.exchange(c.rank, append([]byte(nil), data...))
	out := make([][]byte, len(all))
	for r, v := range all {
		out[r] = append([]byte(nil), v.([]byte)...)
	}
	c.w.exchange(c.rank, nil)
	return out, nil
}

func (c *local) Barrier() error {
	c.w.exchange(c.rank, nil)
	return nil
}
