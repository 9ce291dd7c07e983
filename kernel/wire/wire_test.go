package wire

import (
	"encoding/json"
	"errors"
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
