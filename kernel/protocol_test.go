package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-zeromq/zmq4"

	"github.com/ragen-go/ragen/kernel/wire"
)

// freePorts returns n TCP ports free on loopback right now.
func freePorts(t *testing.T, n int) []int {
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// client is a minimal Jupyter client over zmq4: a DEALER on shell and
// control, a SUB on iopub.
type client struct {
	t               *testing.T
	signer          *wire.Signer
	shell, ctl, sub zmq4.Socket
	session         string
}

func (c *client) send(sock zmq4.Socket, signer *wire.Signer, msgType string, content any) string {
	c.t.Helper()
	h := wire.NewHeader(msgType, c.session)
	frames, err := signer.Encode(nil, h, nil, nil, content)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := sock.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil {
		c.t.Fatal(err)
	}
	return h.MsgID
}

func (c *client) recv(sock zmq4.Socket) *wire.Message {
	c.t.Helper()
	raw, err := sock.Recv()
	if err != nil {
		c.t.Fatal(err)
	}
	m, err := c.signer.Decode(raw.Frames)
	if err != nil {
		c.t.Fatalf("kernel sent a bad message: %v", err)
	}
	return m
}

// iopub collects the IOPub messages of request id up to its idle status.
func (c *client) iopub(id string) []*wire.Message {
	c.t.Helper()
	var out []*wire.Message
	for {
		m := c.recv(c.sub)
		var p wire.Header
		json.Unmarshal(m.Parent, &p)
		if p.MsgID != id {
			continue
		}
		if m.Header.MsgType == "status" && string(m.Content) == `{"execution_state":"idle"}` {
			return out
		}
		out = append(out, m)
	}
}

// TestProtocol runs the kernel in process and talks to it through zmq4:
// replies on the socket of the request, busy/idle, execute_result, and a
// mis-signed request ignored. (TestJupyterClient does the same and more
// with Jupyter's own client.)
func TestProtocol(t *testing.T) {
	ports := freePorts(t, 5)
	conn := wire.ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", ShellPort: ports[0], IOPubPort: ports[1],
		StdinPort: ports[2], ControlPort: ports[3], HBPort: ports[4], Key: "test-key", SignatureScheme: "hmac-sha256"}
	b, _ := json.Marshal(conn)
	path := filepath.Join(t.TempDir(), "conn.json")
	os.WriteFile(path, b, 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, path, Options{Log: log.New(io.Discard, "", 0)}) }()

	c := &client{t: t, signer: wire.NewSigner(conn.Key), session: wire.NewID()}
	c.shell = zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity("test-shell")))
	c.ctl = zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity("test-control")))
	c.sub = zmq4.NewSub(ctx)
	for _, d := range []struct {
		s    zmq4.Socket
		port int
	}{{c.shell, conn.ShellPort}, {c.ctl, conn.ControlPort}, {c.sub, conn.IOPubPort}} {
		var err error
		for i := 0; i < 50; i++ { // the kernel binds asynchronously
			if err = d.s.Dial(conn.Endpoint(d.port)); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer d.s.Close()
	}
	c.sub.SetOption(zmq4.OptionSubscribe, "")

	// kernel_info until IOPub is connected (a SUB misses what was sent before).
	var id string
	for {
		id = c.send(c.shell, c.signer, "kernel_info_request", map[string]any{})
		if r := c.recv(c.shell); r.Header.MsgType != "kernel_info_reply" {
			t.Fatalf("reply %s", r.Header.MsgType)
		}
		got := make(chan bool, 1)
		go func() {
			raw, err := c.sub.Recv()
			got <- err == nil && len(raw.Frames) > 0
		}()
		select {
		case <-got:
		case <-time.After(300 * time.Millisecond):
			continue
		}
		break
	}

	// A control request is answered on control.
	id = c.send(c.ctl, c.signer, "kernel_info_request", map[string]any{})
	r := c.recv(c.ctl)
	var parent wire.Header
	json.Unmarshal(r.Parent, &parent)
	if r.Header.MsgType != "kernel_info_reply" || parent.MsgID != id || r.Header.Session == c.session {
		t.Errorf("control reply %s to %s, session %s", r.Header.MsgType, parent.MsgID, r.Header.Session)
	}

	// A mis-signed execute is dropped; the next, signed, sees no trace of it.
	c.send(c.shell, wire.NewSigner("wrong-key"), "execute_request", map[string]any{"code": "intruder := 1"})
	id = c.send(c.shell, c.signer, "execute_request", map[string]any{"code": "x := 6\nx * 7"})
	r = c.recv(c.shell)
	var reply map[string]any
	json.Unmarshal(r.Content, &reply)
	if reply["status"] != "ok" || reply["execution_count"] != 1.0 {
		t.Fatalf("execute_reply %s", r.Content)
	}
	var types []string
	var result string
	for _, m := range c.iopub(id) {
		types = append(types, m.Header.MsgType)
		if m.Header.MsgType == "execute_result" {
			var res struct {
				Data map[string]string `json:"data"`
			}
			json.Unmarshal(m.Content, &res)
			result = res.Data["text/plain"]
		}
	}
	if fmt.Sprint(types) != "[status execute_input execute_result]" || result != "42" {
		t.Errorf("iopub %v, result %q", types, result)
	}
	c.send(c.shell, c.signer, "execute_request", map[string]any{"code": "intruder"})
	json.Unmarshal(c.recv(c.shell).Content, &reply)
	if reply["status"] != "error" || reply["evalue"] != "cell[2]:1:1: undefined: intruder" {
		t.Errorf("the mis-signed request ran: %v", reply)
	}

	// A replayed execute runs once; one signed in upper-case hex not at all.
	h := wire.NewHeader("execute_request", c.session)
	frames, _ := c.signer.Encode(nil, h, nil, nil, map[string]any{"code": "x++"})
	upper, _ := c.signer.Encode(nil, wire.NewHeader("execute_request", c.session), nil, nil, map[string]any{"code": "x += 100"})
	upper[1] = []byte(strings.ToUpper(string(upper[1])))
	for _, f := range [][][]byte{frames, frames, upper} {
		if err := c.shell.SendMulti(zmq4.NewMsgFrom(f...)); err != nil {
			t.Fatal(err)
		}
	}
	id = c.send(c.shell, c.signer, "execute_request", map[string]any{"code": "x"})
	for _, want := range []string{h.MsgID, id} {
		r := c.recv(c.shell)
		json.Unmarshal(r.Parent, &parent)
		if parent.MsgID != want {
			t.Fatalf("reply to %s, want to %s: a replayed or upper-case-signed request ran", parent.MsgID, want)
		}
	}
	for _, m := range c.iopub(id) {
		if m.Header.MsgType == "execute_result" && !strings.Contains(string(m.Content), `"text/plain":"7"`) {
			t.Errorf("x after x++ sent twice and x += 100 signed in upper case: %s, want 7", m.Content)
		}
	}

	// inspect_request with the cursor inside a call's parentheses (Shift-Tab
	// after `strings.Repeat(`) shows the function; cursor_pos counts runes.
	code := `s := "é"; strings.Repeat(`
	c.send(c.shell, c.signer, "inspect_request", map[string]any{"code": code, "cursor_pos": utf8.RuneCountInString(code), "detail_level": 0})
	r = c.recv(c.shell)
	var insp struct {
		Status string            `json:"status"`
		Found  bool              `json:"found"`
		Data   map[string]string `json:"data"`
	}
	json.Unmarshal(r.Content, &insp)
	if r.Header.MsgType != "inspect_reply" || !insp.Found || insp.Data["text/plain"] != "func strings.Repeat(string, int) string" {
		t.Errorf("inspect inside a call: %s %s", r.Header.MsgType, r.Content)
	}

	// shutdown on control ends Run.
	c.send(c.ctl, c.signer, "shutdown_request", map[string]any{"restart": false})
	json.Unmarshal(c.recv(c.ctl).Content, &reply)
	if reply["status"] != "ok" || reply["restart"] != false {
		t.Errorf("shutdown_reply %v", reply)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after shutdown_request")
	}
}
