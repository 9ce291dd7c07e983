package cellctx

import (
	"context"
	"sync"
)

var (
	mu       sync.Mutex
	cur      context.Context = context.Background()
	observed bool
)

// Context is the running cell's context, or context.Background() when no
// cell runs. Call it when a long call starts (not once at init): each cell
// has its own.
func Context() context.Context {
	mu.Lock()
	defer mu.Unlock()
	observed = true
	return cur
}

// Set makes ctx the current cell's context and returns a function that
// restores the previous one. It is the session's, not the cells'.
func Set(ctx context.Context) (restore func()) {
	mu.Lock()
	prev, prevObserved := cur, observed
	cur, observed = ctx, false
	mu.Unlock()
	return func() {
		mu.Lock()
		cur, observed = prev, prevObserved
		mu.Unlock()
	}
}

// Observed reports whether Context was called since the last Set: whether
// anything in the running cell may be waiting for a cancellation. If
// nothing is, an interrupt need not wait for one to be honoured.
func Observed() bool {
	mu.Lock()
	defer mu.Unlock()
	return observed
}
