// Package cellctx gives compiled code called from a notebook cell the
// cell's context: it is cancelled when the user interrupts the cell, so a
// long call (a training run) stops at its next safe point and returns what
// it has. Outside a cell, Context is context.Background().
//
// The session sets the context for the duration of each cell (Set). Cells
// reach it too: import "ragen/cellctx" and call cellctx.Context().
package cellctx
