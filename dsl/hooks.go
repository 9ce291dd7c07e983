package dsl

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/ragen-go/ragen/engine/train"
)

// The kernel's hooks. A session sets them once; cells never do.
var (
	hookMu     sync.RWMutex
	contextFn  = context.Background
	observerFn func() train.Observer
	displayFn  func(bundle map[string]any, id string)
)

// SetContext sets where Train, Sweep and Seeds get their context: the
// kernel passes one function that returns the running cell's context,
// cancelled when the user interrupts it. nil restores context.Background.
func SetContext(fn func() context.Context) {
	hookMu.Lock()
	defer hookMu.Unlock()
	if fn == nil {
		fn = context.Background
	}
	contextFn = fn
}

// SetObserver sets where runs report progress: fn is called once per run
// and returns the observer for it (the kernel shows a live progress line).
// nil reports nothing.
func SetObserver(fn func() train.Observer) {
	hookMu.Lock()
	defer hookMu.Unlock()
	observerFn = fn
}

// SetDisplay sets how Display publishes a MIME bundle (display_data; id is
// a display id for later updates, "" for none). nil restores the default:
// print the text/plain form to standard output.
func SetDisplay(fn func(bundle map[string]any, id string)) {
	hookMu.Lock()
	defer hookMu.Unlock()
	displayFn = fn
}

// RunObserver is an Observer that also hears when a run starts (its name
// and number of steps) and how it ends (the run so far and the error that
// stopped it, nil when complete): the kernel's live view shows step i of N
// with it, and the final chart and summary, or where the run was
// interrupted, at the end.
type RunObserver interface {
	train.Observer
	Begin(name string, steps int)
	End(r *Run, err error)
}

func currentContext() context.Context {
	hookMu.RLock()
	defer hookMu.RUnlock()
	return contextFn()
}

func currentObserver() train.Observer {
	hookMu.RLock()
	defer hookMu.RUnlock()
	if observerFn == nil {
		return nil
	}
	return observerFn()
}

// Bundler is a value that renders itself: a MIME type → data map
// ("text/plain" → string, "image/png" → []byte, "text/html" → string).
type Bundler interface {
	MIMEBundle() map[string]any
}

// Display shows x: a Bundler by its bundle, anything else by its text
// (fmt.Sprint).
func Display(x any) {
	if b, ok := x.(Bundler); ok {
		publish(b.MIMEBundle())
		return
	}
	publish(map[string]any{"text/plain": fmt.Sprint(x)})
}

// Markdown shows s rendered as Markdown.
func Markdown(s string) { publish(map[string]any{"text/markdown": s, "text/plain": s}) }

// HTML shows s rendered as HTML.
func HTML(s string) { publish(map[string]any{"text/html": s, "text/plain": s}) }

// PNG shows a PNG image.
func PNG(b []byte) {
	publish(map[string]any{"image/png": b, "text/plain": fmt.Sprintf("<PNG image, %d bytes>", len(b))})
}

// SVG shows an SVG image.
func SVG(s string) {
	publish(map[string]any{"image/svg+xml": s, "text/plain": fmt.Sprintf("<SVG image, %d bytes>", len(s))})
}

func publish(bundle map[string]any) {
	hookMu.RLock()
	fn := displayFn
	hookMu.RUnlock()
	if fn != nil {
		fn(bundle, "")
		return
	}
	if s, ok := bundle["text/plain"].(string); ok {
		fmt.Fprintln(os.Stdout, s)
	}
}
