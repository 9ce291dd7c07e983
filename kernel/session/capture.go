package session

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"
	"unicode/utf8"
)

// Output capture at the file-descriptor level. For the duration of a cell,
// fds 1 and 2 are pointed (dup2) at pipes, so everything written to them is
// captured: fmt.Println of interpreted code (yaegi writes to os.Stdout),
// compiled packages, even C code. A reader goroutine per pipe hands chunks
// to the batcher as they come. To know that everything a cell wrote has
// been read before the cell's end is reported, End writes a sentinel into
// the pipe and waits for the reader to see it: pipe writes of up to
// PIPE_BUF bytes are atomic, so the sentinel arrives in one piece, after
// every byte written before it.
//
// The fds are process-wide, so only one capture may be active at a time
// (captureMu); a second session in the same process waits.

var captureMu sync.Mutex

// crashOnce sends the runtime's fatal-error report (an unrecovered panic in
// a goroutine, a deadlock) to a copy of the original stderr too: while a
// cell runs, fd 2 is a pipe whose reader dies with the process, and the
// report would be lost.
var crashOnce sync.Once

func keepCrashOutput() {
	crashOnce.Do(func() {
		fd, err := dupFD(2)
		if err != nil {
			return
		}
		f := os.NewFile(uintptr(fd), "stderr")
		debug.SetCrashOutput(f, debug.CrashOptions{})
	})
}

// sentinel marks a sync point in a pipe. NUL bytes make it unlikely to
// occur in real output; if it does, the reader merely syncs early.
var sentinel = []byte("\x00\x1b[ragen-sync]\x00")

type fdCapture struct {
	fd     int    // 1 or 2
	name   string // "stdout" or "stderr"
	r, w   *os.File
	saved  int           // dup of the original fd while capturing, else -1
	synced chan struct{} // the reader saw a sentinel
	sink   func(name string, b []byte)
}

func newFDCapture(fd int, name string, sink func(string, []byte)) (*fdCapture, error) {
	keepCrashOutput()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("cannot capture %s: %w", name, err)
	}
	c := &fdCapture{fd: fd, name: name, r: r, w: w, saved: -1, synced: make(chan struct{}, 1), sink: sink}
	go c.read()
	return c, nil
}

func (c *fdCapture) read() {
	buf := make([]byte, 64<<10)
	var pending []byte
	for {
		n, err := c.r.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			for {
				i := bytes.Index(pending, sentinel)
				if i < 0 {
					break
				}
				if i > 0 {
					c.sink(c.name, pending[:i])
				}
				pending = pending[i+len(sentinel):]
				c.synced <- struct{}{}
			}
			// Hold back a tail that may be the start of a sentinel.
			k := partialSuffix(pending, sentinel)
			if len(pending) > k {
				c.sink(c.name, pending[:len(pending)-k])
				pending = append(pending[:0], pending[len(pending)-k:]...)
			}
		}
		if err != nil {
			return
		}
	}
}

// partialSuffix is the length of the longest suffix of b that is a proper
// prefix of s.
func partialSuffix(b, s []byte) int {
	for k := min(len(b), len(s)-1); k > 0; k-- {
		if bytes.Equal(b[len(b)-k:], s[:k]) {
			return k
		}
	}
	return 0
}

// begin points the fd at the pipe.
func (c *fdCapture) begin() error {
	saved, err := dupFD(c.fd)
	if err != nil {
		return fmt.Errorf("cannot capture %s: %w", c.name, err)
	}
	if err := dup2FD(int(c.w.Fd()), c.fd); err != nil {
		closeFD(saved)
		return fmt.Errorf("cannot capture %s: %w", c.name, err)
	}
	c.saved = saved
	return nil
}

// end waits until everything written so far was read, then restores the fd.
func (c *fdCapture) end() {
	if c.saved < 0 {
		return
	}
	if _, err := c.w.Write(sentinel); err == nil {
		select {
		case <-c.synced:
		case <-time.After(5 * time.Second): // a reader stuck in its sink; give up waiting
		}
	}
	dup2FD(c.saved, c.fd)
	closeFD(c.saved)
	c.saved = -1
}

func (c *fdCapture) close() {
	c.w.Close()
	c.r.Close()
}

// batcher coalesces output into stream messages: a chunk goes out when 64
// KiB are pending or 50 ms after its first byte, and at every flush (the
// end of a cell). Jupyter frontends and zmq4's PUB socket cope far better
// with few large messages than with one per line. A UTF-8 sequence split
// across reads is held back until it is complete.
type batcher struct {
	mu    sync.Mutex
	emit  func(name, text string) // nil: output is dropped
	bufs  [2][]byte               // stdout, stderr
	timer *time.Timer
}

const (
	batchBytes = 64 << 10
	batchDelay = 50 * time.Millisecond
)

var streamNames = [2]string{"stdout", "stderr"}

func (b *batcher) add(name string, p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := 0
	if name == "stderr" {
		i = 1
	}
	b.bufs[i] = append(b.bufs[i], p...)
	if len(b.bufs[0])+len(b.bufs[1]) >= batchBytes {
		b.flushLocked(false)
		return
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(batchDelay, func() {
			b.mu.Lock()
			b.timer = nil
			b.flushLocked(false)
			b.mu.Unlock()
		})
	}
}

// flush sends everything pending; final also sends an incomplete UTF-8 tail.
func (b *batcher) flush(final bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked(final)
}

func (b *batcher) flushLocked(final bool) {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	for i, buf := range b.bufs {
		n := len(buf)
		if !final {
			n = completeUTF8(buf)
		}
		if n == 0 {
			continue
		}
		if b.emit != nil {
			b.emit(streamNames[i], string(buf[:n]))
		}
		b.bufs[i] = append(buf[:0], buf[n:]...)
	}
}

// completeUTF8 is the length of the longest prefix of b that does not end
// inside a UTF-8 sequence.
func completeUTF8(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return len(b) // ASCII: complete
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-k:]) {
				return len(b)
			}
			return len(b) - k
		}
	}
	return len(b)
}
