package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/go-zeromq/zmq4"

	"github.com/ragen-go/ragen/kernel/display"
	"github.com/ragen-go/ragen/kernel/session"
	"github.com/ragen-go/ragen/kernel/wire"
)

// Version is the kernel's implementation version.
const Version = "0.1.0"

// iopubHWM is the PUB socket's per-subscriber queue. zmq4 drops messages
// past it; with output batched into 64 KiB / 50 ms stream messages this is
// far more than a cell can fill.
const iopubHWM = 100_000

// parentExitGrace is how long the kernel shuts down cleanly after its
// parent died before it exits regardless.
const parentExitGrace = 5 * time.Second

// A Kernel serves one session over the five Jupyter sockets.
type Kernel struct {
	conn    *wire.ConnectionInfo
	signer  *wire.Signer
	session string // this process's session id, in every header we send
	logger  *log.Logger
	sess    *session.Session
	// Setup, if set, runs on the session before serving (e.g. to Use
	// more symbol tables).
	setup func(*session.Session) error

	shell, control, stdin, iopub, hb zmq4.Socket

	iopubCh chan iopubItem
	stopPub chan struct{} // closed by serve when it ends: the publisher stops
	pubDone chan struct{} // closed by the publisher when it stops: pub no longer blocks
	shellCh chan *wire.Message

	mu       sync.Mutex // guards count and history
	count    int
	history  []string
	shutdown chan struct{}
	once     sync.Once
}

// iopubItem is a message for the publisher goroutine, or a sync request.
type iopubItem struct {
	msgType string
	parent  json.RawMessage
	content any
	synced  chan struct{}
}

// Options configure Run.
type Options struct {
	// Log receives the kernel's own log (bad signatures, protocol
	// errors). Default: a copy of stderr made before any cell runs.
	Log *log.Logger
	// Setup runs on the session before the kernel serves.
	Setup func(*session.Session) error
}

// Run serves the kernel described by connFile until a shutdown_request,
// SIGTERM, or the death of the parent named by JPY_PARENT_PID (then it
// returns an error). It binds the five sockets, publishes status "starting", and
// handles shell requests one at a time while control requests (interrupt,
// shutdown) are served at once on their own goroutine.
func Run(ctx context.Context, connFile string, opts Options) error {
	conn, err := wire.ReadConnectionFile(connFile)
	if err != nil {
		return err
	}
	if opts.Log == nil {
		opts.Log = log.New(stderrCopy(), "ragen kernel: ", log.LstdFlags)
	}
	k := &Kernel{
		conn:     conn,
		signer:   wire.NewSigner(conn.Key),
		session:  wire.NewID(),
		logger:   opts.Log,
		setup:    opts.Setup,
		iopubCh:  make(chan iopubItem, 4096),
		stopPub:  make(chan struct{}),
		pubDone:  make(chan struct{}),
		shellCh:  make(chan *wire.Message, 1024),
		shutdown: make(chan struct{}),
	}
	return k.serve(ctx)
}

func (k *Kernel) serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess, err := session.New(session.Options{})
	if err != nil {
		return err
	}
	defer sess.Close()
	if k.setup != nil {
		if err := k.setup(sess); err != nil {
			return err
		}
	}
	k.sess = sess

	// zmq4 logs to os.Stderr by default, which is a cell's stderr while a
	// cell runs: give it the kernel's log.
	logOpt := zmq4.WithLogger(k.logger)
	k.shell = zmq4.NewRouter(ctx, logOpt)
	k.control = zmq4.NewRouter(ctx, logOpt)
	k.stdin = zmq4.NewRouter(ctx, logOpt)
	k.iopub = zmq4.NewPub(ctx, logOpt)
	k.hb = zmq4.NewRep(ctx, logOpt)
	if err := k.iopub.SetOption(zmq4.OptionHWM, iopubHWM); err != nil {
		return fmt.Errorf("iopub: %w", err)
	}
	for _, s := range []struct {
		sock zmq4.Socket
		name string
		port int
	}{{k.shell, "shell", k.conn.ShellPort}, {k.control, "control", k.conn.ControlPort},
		{k.stdin, "stdin", k.conn.StdinPort}, {k.iopub, "iopub", k.conn.IOPubPort}, {k.hb, "heartbeat", k.conn.HBPort}} {
		if err := s.sock.Listen(k.conn.Endpoint(s.port)); err != nil {
			return fmt.Errorf("cannot bind %s socket to %s: %w", s.name, k.conn.Endpoint(s.port), err)
		}
		defer s.sock.Close()
	}

	go k.publish()
	go k.heartbeat()
	go k.read(k.shell, "shell", func(m *wire.Message) { k.shellCh <- m })
	go k.read(k.control, "control", func(m *wire.Message) { k.handle(k.control, m) })
	go k.read(k.stdin, "stdin", func(m *wire.Message) {
		k.logger.Printf("stdin: ignoring %s (input requests are not supported)", m.Header.MsgType)
	})

	sig := make(chan os.Signal, 4)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		for {
			select {
			case s := <-sig:
				if s == os.Interrupt {
					k.sess.Interrupt()
				} else {
					k.stop()
				}
			case <-k.shutdown:
				return
			}
		}
	}()

	k.pub("status", nil, map[string]any{"execution_state": "starting"})
	go func() {
		for {
			select {
			case m := <-k.shellCh:
				k.handle(k.shell, m)
			case <-k.shutdown:
				return
			}
		}
	}()

	served := make(chan struct{})
	defer close(served)
	var exitErr error
	select {
	case <-k.shutdown:
	case <-ctx.Done():
	case pid := <-watchParent(os.Getenv("JPY_PARENT_PID"), served):
		// The process that started us is gone (see parent_unix.go): shut
		// down, and if that hangs (a cell stuck in compiled code holding
		// the publisher), exit anyway so the ports are released.
		exitErr = fmt.Errorf("parent process %d exited: the kernel shuts down", pid)
		k.logger.Print(exitErr)
		k.stop()
		t := time.AfterFunc(parentExitGrace, func() {
			k.logger.Printf("shutdown did not finish within %v: exiting", parentExitGrace)
			os.Exit(1)
		})
		defer t.Stop()
	}
	k.syncIOPub()
	close(k.stopPub)
	<-k.pubDone
	return exitErr
}

func (k *Kernel) stop() { k.once.Do(func() { close(k.shutdown) }) }

// read receives from a ROUTER socket, verifies each message and hands it on.
// A message with a bad signature is logged and dropped, never acted upon.
func (k *Kernel) read(sock zmq4.Socket, name string, handle func(*wire.Message)) {
	for {
		raw, err := sock.Recv()
		if err != nil {
			select {
			case <-k.shutdown:
			default:
				k.logger.Printf("%s: receive: %v", name, err)
			}
			return
		}
		m, err := k.signer.Decode(raw.Frames)
		if err != nil {
			k.logger.Printf("%s: dropping message: %v", name, err)
			continue
		}
		handle(m)
	}
}

func (k *Kernel) heartbeat() {
	for {
		m, err := k.hb.Recv()
		if err != nil {
			return
		}
		if err := k.hb.Send(m); err != nil {
			return
		}
	}
}

// publish owns the PUB socket: every IOPub message goes through it, in order.
func (k *Kernel) publish() {
	defer close(k.pubDone)
	for {
		var it iopubItem
		select {
		case it = <-k.iopubCh:
		case <-k.stopPub:
			return
		}
		if it.synced != nil {
			close(it.synced)
			continue
		}
		h := wire.NewHeader(it.msgType, k.session)
		frames, err := k.signer.Encode([][]byte{[]byte("kernel." + k.session + "." + it.msgType)}, h, it.parent, nil, it.content)
		if err != nil {
			k.logger.Printf("iopub: %v", err)
			continue
		}
		if err := k.iopub.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil {
			k.logger.Printf("iopub: send %s: %v", it.msgType, err)
		}
	}
}

// pub queues an IOPub message with the given parent header.
func (k *Kernel) pub(msgType string, parent json.RawMessage, content any) {
	select {
	case k.iopubCh <- iopubItem{msgType: msgType, parent: parent, content: content}:
	case <-k.pubDone: // shut down: dropped
	}
}

// syncIOPub returns once every IOPub message queued before it was sent, so
// that outputs precede the reply that ends a request.
func (k *Kernel) syncIOPub() {
	done := make(chan struct{})
	select {
	case k.iopubCh <- iopubItem{synced: done}:
	case <-k.pubDone:
		return
	}
	select {
	case <-done:
	case <-k.pubDone:
	}
}

// reply sends a reply to m on the socket m came from.
func (k *Kernel) reply(sock zmq4.Socket, m *wire.Message, msgType string, content any) {
	k.syncIOPub()
	h := wire.NewHeader(msgType, k.session)
	frames, err := k.signer.Encode(m.Identities, h, m.RawHeader, nil, content)
	if err != nil {
		k.logger.Printf("%s: %v", msgType, err)
		return
	}
	if err := sock.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil {
		k.logger.Printf("send %s: %v", msgType, err)
	}
}

// handle serves one request between status busy and idle. A failure of
// ours while serving it is logged; the kernel goes on.
func (k *Kernel) handle(sock zmq4.Socket, m *wire.Message) {
	parent := m.RawHeader
	k.pub("status", parent, map[string]any{"execution_state": "busy"})
	defer k.pub("status", parent, map[string]any{"execution_state": "idle"})
	defer func() {
		if r := recover(); r != nil {
			k.logger.Printf("%s: internal error: %v\n%s", m.Header.MsgType, r, debug.Stack())
		}
	}()
	t := m.Header.MsgType
	switch t {
	case "kernel_info_request":
		k.reply(sock, m, "kernel_info_reply", kernelInfo())
	case "execute_request":
		k.execute(sock, m)
	case "complete_request":
		k.complete(sock, m)
	case "inspect_request":
		k.inspect(sock, m)
	case "is_complete_request":
		var c struct{ Code string }
		json.Unmarshal(m.Content, &c)
		status, indent := session.IsComplete(c.Code)
		content := map[string]any{"status": status}
		if status == "incomplete" {
			content["indent"] = indent
		}
		k.reply(sock, m, "is_complete_reply", content)
	case "history_request":
		k.historyReply(sock, m)
	case "comm_info_request":
		k.reply(sock, m, "comm_info_reply", map[string]any{"status": "ok", "comms": map[string]any{}})
	case "comm_open":
		// No comm targets: close the comm as the spec asks.
		var c struct {
			CommID string `json:"comm_id"`
		}
		json.Unmarshal(m.Content, &c)
		k.pub("comm_close", parent, map[string]any{"comm_id": c.CommID, "data": map[string]any{}})
	case "comm_msg", "comm_close":
	case "interrupt_request":
		k.sess.Interrupt()
		k.reply(sock, m, "interrupt_reply", map[string]any{"status": "ok"})
	case "shutdown_request":
		var c struct {
			Restart bool `json:"restart"`
		}
		json.Unmarshal(m.Content, &c)
		k.sess.Interrupt()
		k.reply(sock, m, "shutdown_reply", map[string]any{"status": "ok", "restart": c.Restart})
		k.stop()
	default:
		k.logger.Printf("ignoring unknown message type %q", t)
	}
}

func kernelInfo() map[string]any {
	return map[string]any{
		"status":                 "ok",
		"protocol_version":       wire.Version,
		"implementation":         "ragen",
		"implementation_version": Version,
		"language_info": map[string]any{
			"name":               "go",
			"version":            strings.TrimPrefix(runtime.Version(), "go"),
			"mimetype":           "text/x-go",
			"file_extension":     ".go",
			"codemirror_mode":    "go",
			"pygments_lexer":     "go",
			"nbconvert_exporter": "script",
		},
		"banner": "ragen " + Version + ": Go cells interpreted by yaegi, for multi-turn RL experiments",
		"help_links": []map[string]string{
			{"text": "Go documentation", "url": "https://go.dev/doc/"},
		},
	}
}

type executeRequest struct {
	Code         string `json:"code"`
	Silent       bool   `json:"silent"`
	StoreHistory *bool  `json:"store_history"`
	StopOnError  *bool  `json:"stop_on_error"`
}

func (k *Kernel) execute(sock zmq4.Socket, m *wire.Message) {
	var req executeRequest
	if err := json.Unmarshal(m.Content, &req); err != nil {
		k.mu.Lock()
		n := k.count
		k.mu.Unlock()
		k.reply(sock, m, "execute_reply", map[string]any{"status": "error", "ename": "BadRequest",
			"evalue": err.Error(), "traceback": []string{}, "execution_count": n})
		return
	}
	store := req.StoreHistory == nil || *req.StoreHistory
	if req.Silent {
		store = false
	}
	parent := m.RawHeader
	k.mu.Lock()
	if store {
		k.count++
		k.history = append(k.history, req.Code)
	}
	n := k.count
	k.mu.Unlock()
	if !req.Silent {
		k.pub("execute_input", parent, map[string]any{"code": req.Code, "execution_count": n})
	}
	out := session.Output{}
	if !req.Silent {
		out.Stream = func(name, text string) {
			k.pub("stream", parent, map[string]any{"name": name, "text": text})
		}
		out.Display = func(d display.Data) {
			content := map[string]any{"data": d.Bundle, "metadata": d.Metadata, "transient": map[string]any{}}
			msgType := "display_data"
			if d.ID != "" {
				content["transient"] = map[string]any{"display_id": d.ID}
				if d.Update {
					msgType = "update_display_data"
				}
			}
			k.pub(msgType, parent, content)
		}
	}
	res := k.sess.Execute(context.Background(), session.Cell{Code: req.Code, Number: n}, out)
	if res.Err != nil {
		tb := res.Err.Traceback
		if tb == nil {
			tb = []string{}
		}
		if !req.Silent {
			k.pub("error", parent, map[string]any{"ename": res.Err.Name, "evalue": res.Err.Value, "traceback": tb})
		}
		k.reply(sock, m, "execute_reply", map[string]any{"status": "error", "execution_count": n,
			"ename": res.Err.Name, "evalue": res.Err.Value, "traceback": tb, "user_expressions": map[string]any{}})
		if req.StopOnError == nil || *req.StopOnError {
			k.abortQueued()
		}
		return
	}
	if res.Data != nil && !req.Silent {
		k.pub("execute_result", parent, map[string]any{"execution_count": n, "data": res.Data, "metadata": res.Metadata})
	}
	k.reply(sock, m, "execute_reply", map[string]any{"status": "ok", "execution_count": n,
		"user_expressions": map[string]any{}, "payload": []any{}})
}

// abortQueued answers the execute requests already queued behind a failed
// cell with status "aborted", as IPython does: a "Run All" stops at the
// first error. Other queued requests are served normally.
func (k *Kernel) abortQueued() {
	time.Sleep(10 * time.Millisecond) // let requests sent together with the failed one arrive
	for {
		select {
		case m := <-k.shellCh:
			if m.Header.MsgType != "execute_request" {
				k.handle(k.shell, m)
				continue
			}
			k.pub("status", m.RawHeader, map[string]any{"execution_state": "busy"})
			k.mu.Lock()
			n := k.count
			k.mu.Unlock()
			k.reply(k.shell, m, "execute_reply", map[string]any{"status": "aborted", "execution_count": n})
			k.pub("status", m.RawHeader, map[string]any{"execution_state": "idle"})
		default:
			return
		}
	}
}

// Jupyter gives cursor positions in Unicode code points; the session works
// in bytes.
func runeToByte(s string, cursor int) int {
	i := 0
	for n := 0; n < cursor && i < len(s); n++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return i
}

func (k *Kernel) complete(sock zmq4.Socket, m *wire.Message) {
	var c struct {
		Code      string `json:"code"`
		CursorPos int    `json:"cursor_pos"`
	}
	json.Unmarshal(m.Content, &c)
	matches, start, end := k.sess.Complete(c.Code, runeToByte(c.Code, c.CursorPos))
	if matches == nil {
		matches = []string{}
	}
	k.reply(sock, m, "complete_reply", map[string]any{"status": "ok", "matches": matches,
		"cursor_start": utf8.RuneCountInString(c.Code[:start]), "cursor_end": utf8.RuneCountInString(c.Code[:end]),
		"metadata": map[string]any{}})
}

func (k *Kernel) inspect(sock zmq4.Socket, m *wire.Message) {
	var c struct {
		Code      string `json:"code"`
		CursorPos int    `json:"cursor_pos"`
	}
	json.Unmarshal(m.Content, &c)
	text, found := k.sess.Inspect(c.Code, runeToByte(c.Code, c.CursorPos))
	data := map[string]any{}
	if found {
		data["text/plain"] = text
	}
	k.reply(sock, m, "inspect_reply", map[string]any{"status": "ok", "found": found, "data": data, "metadata": map[string]any{}})
}

func (k *Kernel) historyReply(sock zmq4.Socket, m *wire.Message) {
	var c struct {
		Output         bool   `json:"output"`
		HistAccessType string `json:"hist_access_type"`
		N              int    `json:"n"`
		Start, Stop    int
		Pattern        string `json:"pattern"`
	}
	json.Unmarshal(m.Content, &c)
	k.mu.Lock()
	var hist []any
	for i, code := range k.history {
		entry := []any{0, i + 1, code}
		if c.Output {
			entry[2] = []any{code, nil}
		}
		hist = append(hist, entry)
	}
	k.mu.Unlock()
	switch c.HistAccessType {
	case "tail":
		if c.N > 0 && c.N < len(hist) {
			hist = hist[len(hist)-c.N:]
		}
	case "range":
		lo, hi := max(c.Start-1, 0), len(hist)
		if c.Stop > 0 {
			hi = min(c.Stop-1, len(hist))
		}
		if lo < hi {
			hist = hist[lo:hi]
		} else {
			hist = nil
		}
	case "search":
		var keep []any
		pat := strings.Trim(c.Pattern, "*")
		for _, h := range hist {
			if code, ok := h.([]any)[2].(string); ok && strings.Contains(code, pat) {
				keep = append(keep, h)
			}
		}
		hist = keep
	}
	if hist == nil {
		hist = []any{}
	}
	k.reply(sock, m, "history_reply", map[string]any{"status": "ok", "history": hist})
}
