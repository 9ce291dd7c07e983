package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSignRoundTrip(t *testing.T) {
	s := NewSigner("secret")
	h := NewHeader("execute_request", "sess")
	frames, err := s.Encode([][]byte{[]byte("id1")}, h, nil, nil, map[string]any{"code": "1"})
	if err != nil {
		t.Fatal(err)
	}
	// The signature is HMAC-SHA256 over header, parent, metadata, content.
	if got, want := string(frames[2]), s.Sign(frames[3], frames[4], frames[5], frames[6]); got != want || len(got) != 64 {
		t.Fatalf("signature %q, want %q", got, want)
	}
	m, err := s.Decode(frames)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Identities[0]) != "id1" || m.Header.MsgType != "execute_request" || string(m.Parent) != "{}" {
		t.Errorf("decoded %+v", m)
	}
	var c map[string]string
	json.Unmarshal(m.Content, &c)
	if c["code"] != "1" {
		t.Errorf("content %s", m.Content)
	}

	// Wrong key, tampered content, missing signature: all rejected.
	if _, err := NewSigner("other").Decode(frames); !errors.Is(err, ErrBadSignature) {
		t.Errorf("wrong key: err = %v", err)
	}
	tampered := append([][]byte(nil), frames...)
	tampered[6] = []byte(`{"code":"2"}`)
	if _, err := s.Decode(tampered); !errors.Is(err, ErrBadSignature) {
		t.Errorf("tampered content: err = %v", err)
	}
	unsigned := append([][]byte(nil), frames...)
	unsigned[2] = nil
	if _, err := s.Decode(unsigned); !errors.Is(err, ErrBadSignature) {
		t.Errorf("missing signature: err = %v", err)
	}
	// Without a key, nothing is signed or checked.
	frames, _ = NewSigner("").Encode(nil, h, nil, nil, map[string]any{})
	if len(frames[1]) != 0 {
		t.Errorf("unsigned message carries signature %q", frames[1])
	}
	if _, err := NewSigner("").Decode(frames); err != nil {
		t.Error(err)
	}
}

// A replayed message and an upper-case signature are rejected, as
// jupyter_client's Session rejects them (issue 27).
func TestReplayAndCase(t *testing.T) {
	s := NewSigner("secret")
	encode := func() [][]byte {
		frames, err := s.Encode(nil, NewHeader("execute_request", "sess"), nil, nil, map[string]any{"code": "x++"})
		if err != nil {
			t.Fatal(err)
		}
		return frames
	}
	frames := encode()
	if _, err := s.Decode(frames); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decode(frames); !errors.Is(err, ErrReplayed) {
		t.Errorf("replayed message: err = %v, want ErrReplayed", err)
	}
	upper := encode()
	upper[1] = []byte(strings.ToUpper(string(upper[1])))
	if _, err := s.Decode(upper); !errors.Is(err, ErrBadSignature) {
		t.Errorf("upper-case signature: err = %v, want ErrBadSignature", err)
	}
	// A bad signature is not remembered: the real message still goes through.
	good := encode()
	bad := append([][]byte(nil), good...)
	bad[1] = []byte(strings.Repeat("0", 64))
	s.Decode(bad)
	if _, err := s.Decode(good); err != nil {
		t.Errorf("after a forged copy, the real message: %v", err)
	}
	// Without a key there is no signature to remember: nothing is rejected.
	none := NewSigner("")
	frames, _ = none.Encode(nil, NewHeader("kernel_info_request", "sess"), nil, nil, map[string]any{})
	for i := 0; i < 2; i++ {
		if _, err := none.Decode(frames); err != nil {
			t.Errorf("unsigned, decode %d: %v", i, err)
		}
	}
}

// The history is bounded: past historySize the oldest signature is
// forgotten, the newest kept.
func TestHistoryBound(t *testing.T) {
	s := NewSigner("k")
	for i := 0; i < historySize+10; i++ {
		s.remember(fmt.Sprintf("%064x", i))
	}
	if len(s.seen) != historySize || len(s.ring) != historySize {
		t.Fatalf("history holds %d (%d in ring), want %d", len(s.seen), len(s.ring), historySize)
	}
	if !s.remember(fmt.Sprintf("%064x", 0)) {
		t.Error("the oldest signature is still remembered")
	}
	if s.remember(fmt.Sprintf("%064x", historySize+9)) {
		t.Error("the newest signature was forgotten")
	}
}

func TestDecodeMalformed(t *testing.T) {
	s := NewSigner("")
	for _, tc := range []struct {
		frames [][]byte
		want   string
	}{
		{[][]byte{[]byte("id")}, "malformed message: no <IDS|MSG> delimiter"},
		{[][]byte{[]byte(Delimiter), nil, []byte("{}")}, "malformed message: 2 frames after the delimiter, want at least 5"},
		{[][]byte{[]byte(Delimiter), nil, []byte("nope"), []byte("{}"), []byte("{}"), []byte("{}")}, "malformed message header"},
	} {
		if _, err := s.Decode(tc.frames); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("err = %v, want %s", err, tc.want)
		}
	}
}

func TestConnectionFile(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "c.json")
		os.WriteFile(p, []byte(s), 0o600)
		return p
	}
	good := `{"transport":"tcp","ip":"127.0.0.1","shell_port":1,"iopub_port":2,"stdin_port":3,"control_port":4,"hb_port":5,"key":"k","signature_scheme":"hmac-sha256"}`
	c, err := ReadConnectionFile(write(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Endpoint(c.ShellPort) != "tcp://127.0.0.1:1" {
		t.Errorf("endpoint %s", c.Endpoint(c.ShellPort))
	}
	c.Transport = "ipc"
	if c.Endpoint(5) != "ipc://127.0.0.1-5" {
		t.Errorf("ipc endpoint %s", c.Endpoint(5))
	}
	for in, want := range map[string]string{
		`{`: "not valid JSON",
		strings.Replace(good, `"tcp"`, `"udp"`, 1):              `transport: must be tcp or ipc (got "udp")`,
		strings.Replace(good, `"hb_port":5`, `"hb_port":0`, 1):  "hb_port: must be in 1..65535 (got 0)",
		strings.Replace(good, `"hmac-sha256"`, `"hmac-md5"`, 1): `signature_scheme: must be hmac-sha256 (got "hmac-md5")`,
	} {
		if _, err := ReadConnectionFile(write(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %s", in, err, want)
		}
	}
}

func TestNewID(t *testing.T) {
	a, b := NewID(), NewID()
	if a == b || len(a) != 36 || a[14] != '4' {
		t.Errorf("ids %s %s", a, b)
	}
}
