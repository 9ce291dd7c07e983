package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecode: any frames (split at 0xFF in the input) with any key never
// panic the decoder; a message that decodes was signed with the key, and
// decoding it again is a replay.
func FuzzDecode(f *testing.F) {
	join := func(frames [][]byte) []byte { return bytes.Join(frames, []byte{0xFF}) }
	s := NewSigner("secret")
	frames, _ := s.Encode([][]byte{[]byte("id")}, NewHeader("execute_request", "sess"), nil, nil, map[string]any{"code": "1+1"})
	f.Add("secret", join(frames))
	f.Add("", join(frames))
	f.Add("secret", []byte("<IDS|MSG>\xffabc\xff{}\xff{}\xff{}\xff{}"))
	f.Add("", []byte("<IDS|MSG>\xff\xff{\"msg_type\": 7}\xff{}\xff{}\xff{}"))
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		frames := bytes.Split(data, []byte{0xFF})
		s := NewSigner(key)
		m, err := s.Decode(frames)
		if err != nil {
			return
		}
		if !json.Valid(m.RawHeader) {
			t.Fatalf("decoded a message whose header is not JSON: %q", m.RawHeader)
		}
		if key == "" {
			return
		}
		if _, err := s.Decode(frames); !errors.Is(err, ErrReplayed) {
			t.Fatalf("the same signed frames decoded twice: %v", err)
		}
	})
}
