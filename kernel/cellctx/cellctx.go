// Package cellctx gives compiled code called from a notebook cell the
// cell's context: it is cancelled when the user interrupts the cell, so a
// long call (a training run) stops at its next safe point and returns what
// it has. Outside a cell, Context is context.Background().
//
// The session sets the context for the duration of each cell (Set). Cells
// reach it too: import "ragen/cellctx" and call cellctx.Context().
package cellctx

import (
	"context"
	"sync"
)

var (
	mu  sync.Mutex
	cur context.Context = context.Background()
)

// Context is the running cell's context, or context.Background() when no
// cell runs.
func Context() context.Context {
	mu.Lock()
	defer mu.Unlock()
	return cur
}

// Set makes ctx the current cell's context and returns a function that
// restores the previous one.
func Set(ctx context.Context) (restore func()) {
	mu.Lock()
	prev := cur
	cur = ctx
	mu.Unlock()
	return func() {
		mu.Lock()
		cur = prev
		mu.Unlock()
	}
}
