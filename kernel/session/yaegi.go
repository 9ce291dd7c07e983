package session

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/traefik/yaegi/interp"
)

// Stopping the interpreter without breaking function values.
//
// yaegi stops running code with a run id: every frame carries the id it
// was created under, every instruction loop runs while its frame's id is
// the interpreter's, and ExecuteWithContext stops a run by incrementing the
// interpreter's id for good. A function literal copies the frame it was
// made in, id included (getFunc clones it), so after one stop every closure
// made before it ran under the old id: its body no longer ran and a call
// returned zero values (add(1, 2) == 0), while named functions, which take
// the current id at each call, went on working.
//
// So the session runs programs itself (Execute in its own goroutine), stops
// one as ExecuteWithContext does (id+1, close the run's channel-cancel
// channel), waits for the stopped code to return, and at the next run puts
// the id back: closures made before the stop run again. If the stopped code
// has not returned by then (a compiled call that ignores interrupts still
// runs), the id stays incremented, since putting it back would resume the
// stopped cell when the call returns; the next cell says so plainly.
//
// The fields are yaegi v0.16.1's (interp.Interpreter: id, mutex, done,
// cancelChan, roots); newInternals checks their types, so a yaegi upgrade
// that changes them fails at New, in every test.

// internals are the interpreter fields the session needs and yaegi's API
// does not expose.
type internals struct {
	id         *uint64        // run id (see above)
	mu         *sync.RWMutex  // guards done
	done       *chan struct{} // closed to cancel the run's channel operations
	cancelChan *bool          // whether channel operations watch done
	roots      reflect.Value  // []*node: every compiled program, kept for the debugger
	universe   reflect.Value  // *scope
	scopes     reflect.Value  // map[string]*scope: package scopes by path
}

func newInternals(in *interp.Interpreter) (*internals, error) {
	v := reflect.ValueOf(in).Elem()
	field := func(name string, want reflect.Type) (unsafe.Pointer, error) {
		f := v.FieldByName(name)
		if !f.IsValid() || (want != nil && f.Type() != want) {
			return nil, fmt.Errorf("yaegi's Interpreter has no field %s of type %v: the session is written for yaegi v0.16.1", name, want)
		}
		return unsafe.Pointer(f.UnsafeAddr()), nil
	}
	var x internals
	for _, f := range []struct {
		name string
		typ  reflect.Type
		dst  func(unsafe.Pointer)
	}{
		{"id", reflect.TypeFor[uint64](), func(p unsafe.Pointer) { x.id = (*uint64)(p) }},
		{"mutex", reflect.TypeFor[sync.RWMutex](), func(p unsafe.Pointer) { x.mu = (*sync.RWMutex)(p) }},
		{"done", reflect.TypeFor[chan struct{}](), func(p unsafe.Pointer) { x.done = (*chan struct{})(p) }},
		{"cancelChan", reflect.TypeFor[bool](), func(p unsafe.Pointer) { x.cancelChan = (*bool)(p) }},
	} {
		p, err := field(f.name, f.typ)
		if err != nil {
			return nil, err
		}
		f.dst(p)
	}
	r := v.FieldByName("roots")
	if !r.IsValid() || r.Kind() != reflect.Slice {
		return nil, fmt.Errorf("yaegi's Interpreter has no slice field roots: the session is written for yaegi v0.16.1")
	}
	x.roots = reflect.NewAt(r.Type(), unsafe.Pointer(r.UnsafeAddr())).Elem()
	u, sc := v.FieldByName("universe"), v.FieldByName("scopes")
	if !u.IsValid() || u.Kind() != reflect.Pointer || !sc.IsValid() || sc.Kind() != reflect.Map ||
		u.Type().Elem().Kind() != reflect.Struct || sc.Type().Elem() != u.Type() {
		return nil, fmt.Errorf("yaegi's Interpreter has no scopes like v0.16.1's")
	}
	if f, ok := u.Type().Elem().FieldByName("child"); !ok || f.Type.Kind() != reflect.Slice || f.Type.Elem() != u.Type() {
		return nil, fmt.Errorf("yaegi's scope has no child list like v0.16.1's")
	}
	x.universe = reflect.NewAt(u.Type(), unsafe.Pointer(u.UnsafeAddr())).Elem()
	x.scopes = reflect.NewAt(sc.Type(), unsafe.Pointer(sc.UnsafeAddr())).Elem()
	return &x, nil
}

// stopped is a run the session stopped: the id it ran under and a channel
// closed when its code has returned.
type stopped struct {
	id    uint64
	ended chan struct{}
	cell  int // execution count of the stopped cell, for the message
}

// stopWait is how long a stop waits for the stopped code to return before
// the cell is reported. Interpreted code returns at its next instruction;
// only a compiled call can hold it longer.
const stopWait = time.Second

// execute runs a compiled program until it ends or ctx is cancelled, as
// ExecuteWithContext does, but so that the stop can be undone (see above).
func (s *Session) execute(ctx context.Context, prog *interp.Program) (reflect.Value, error) {
	s.resume()
	x := s.yi
	done := make(chan struct{})
	x.mu.Lock()
	*x.done = done
	*x.cancelChan = true
	x.mu.Unlock()

	type outcome struct {
		v   reflect.Value
		err error
	}
	ended := make(chan outcome, 1)
	go func() {
		v, err := s.in.Execute(prog)
		ended <- outcome{v, err}
	}()
	select {
	case o := <-ended:
		return o.v, o.err
	case <-ctx.Done():
	}

	st := &stopped{id: atomic.AddUint64(x.id, 1) - 1, ended: make(chan struct{})}
	x.mu.Lock()
	close(done)
	x.mu.Unlock()
	s.mu.Lock()
	st.cell = s.cellNumber
	s.stop = st
	s.mu.Unlock()
	go func() {
		<-ended
		close(st.ended)
	}()
	select {
	case <-st.ended:
	case <-time.After(stopWait):
	}
	return reflect.Value{}, ctx.Err()
}

// resume puts back the run id after a stop whose code has returned, so that
// function values made before the stop run again (see above).
func (s *Session) resume() {
	s.mu.Lock()
	st := s.stop
	s.stop = nil
	s.mu.Unlock()
	if st == nil {
		return
	}
	select {
	case <-st.ended:
		atomic.CompareAndSwapUint64(s.yi.id, st.id+1, st.id)
	default:
		fmt.Fprintf(os.Stderr, "ragen: cell [%d] was stopped inside a compiled call that is still running; "+
			"function literals made before it (add := func...) no longer run: define them again\n", st.cell)
	}
}

// forgetCompiled drops what yaegi keeps of every compile and never reads
// again, which kept every cell's syntax tree and code alive (~20 KB a
// cell of `1`): its list of compiled programs (read by its debugger only)
// and each scope's list of the block scopes opened in it (appended to,
// never read).
func (s *Session) forgetCompiled() {
	x := s.yi
	x.roots.Set(reflect.Zero(x.roots.Type()))
	clear := func(sc reflect.Value) {
		if sc.IsNil() {
			return
		}
		c := sc.Elem().FieldByName("child")
		c = reflect.NewAt(c.Type(), unsafe.Pointer(c.UnsafeAddr())).Elem()
		c.Set(reflect.Zero(c.Type()))
	}
	clear(x.universe)
	for it := x.scopes.MapRange(); it.Next(); {
		clear(it.Value())
	}
}
