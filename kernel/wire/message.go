package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Version is the protocol version the kernel speaks.
const Version = "5.3"

// Delimiter separates routing identities from the message.
const Delimiter = "<IDS|MSG>"

// ErrBadSignature is returned for a message whose HMAC does not verify.
var ErrBadSignature = errors.New("bad message signature")

// ErrReplayed is returned for a signed message whose signature was seen
// before: a replay of a captured message, which must not run twice.
var ErrReplayed = errors.New("duplicate message signature (replayed message)")

// historySize is how many signatures a Signer remembers, jupyter_client's
// digest_history_size. Past it the oldest are forgotten.
const historySize = 1 << 16

// Header is a message header.
type Header struct {
	MsgID    string `json:"msg_id"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	MsgType  string `json:"msg_type"`
	Version  string `json:"version"`
}

// Message is one decoded message. Parent is the parent header as received
// (raw JSON), so a reply can echo the request's header exactly, unknown
// fields included.
type Message struct {
	Identities [][]byte
	Header     Header
	RawHeader  json.RawMessage // the header frame as received
	Parent     json.RawMessage // parent_header; "{}" when none
	Metadata   json.RawMessage
	Content    json.RawMessage
	Buffers    [][]byte
}

// Signer signs and verifies messages with a connection's key, and rejects
// replays: like jupyter_client's Session (digest_history), it remembers the
// signatures of the messages it accepted. One Signer serves all sockets of
// a connection; it is safe for concurrent use.
type Signer struct {
	key []byte

	mu   sync.Mutex
	seen map[string]struct{} // accepted signatures
	ring []string            // the same, oldest first from next, to forget
	next int
}

// NewSigner returns a signer for key; an empty key disables signing.
func NewSigner(key string) *Signer { return &Signer{key: []byte(key), seen: map[string]struct{}{}} }

// remember records sig and reports whether it was new.
func (s *Signer) remember(sig string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[sig]; ok {
		return false
	}
	if len(s.ring) < historySize {
		s.ring = append(s.ring, sig)
	} else {
		delete(s.seen, s.ring[s.next])
		s.ring[s.next] = sig
		s.next = (s.next + 1) % historySize
	}
	s.seen[sig] = struct{}{}
	return true
}

// Sign is the hex HMAC-SHA256 of the four frames, "" without a key.
func (s *Signer) Sign(header, parent, metadata, content []byte) string {
	if len(s.key) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, s.key)
	m.Write(header)
	m.Write(parent)
	m.Write(metadata)
	m.Write(content)
	return hex.EncodeToString(m.Sum(nil))
}

// Decode parses multipart frames and verifies the signature: the
// lower-case hex HMAC, as Sign writes it and jupyter_client compares it (an
// upper-case one is rejected), never seen before (ErrReplayed).
func (s *Signer) Decode(frames [][]byte) (*Message, error) {
	i := 0
	for i < len(frames) && string(frames[i]) != Delimiter {
		i++
	}
	if i == len(frames) {
		return nil, fmt.Errorf("malformed message: no %s delimiter", Delimiter)
	}
	if len(frames) < i+6 {
		return nil, fmt.Errorf("malformed message: %d frames after the delimiter, want at least 5", len(frames)-i-1)
	}
	sig := frames[i+1]
	header, parent, metadata, content := frames[i+2], frames[i+3], frames[i+4], frames[i+5]
	if len(s.key) > 0 {
		want := s.Sign(header, parent, metadata, content)
		if !hmac.Equal(sig, []byte(want)) {
			return nil, ErrBadSignature
		}
		if !s.remember(want) {
			return nil, ErrReplayed
		}
	}
	m := &Message{
		Identities: frames[:i],
		RawHeader:  json.RawMessage(header),
		Parent:     json.RawMessage(parent),
		Metadata:   json.RawMessage(metadata),
		Content:    json.RawMessage(content),
		Buffers:    frames[i+6:],
	}
	if err := json.Unmarshal(header, &m.Header); err != nil {
		return nil, fmt.Errorf("malformed message header: %w", err)
	}
	return m, nil
}

// Encode returns the frames of a message: identities, delimiter,
// signature, header, parent, metadata, content, buffers.
func (s *Signer) Encode(identities [][]byte, header Header, parent json.RawMessage, metadata, content any) ([][]byte, error) {
	h, err := json.Marshal(header)
	if err != nil {
		return nil, err
	}
	if len(parent) == 0 {
		parent = json.RawMessage("{}")
	}
	if metadata == nil {
		metadata = map[string]any{}
	}
	md, err := json.Marshal(metadata)
	if err != nil {
		return nil, err
	}
	c, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("cannot encode %s content: %w", header.MsgType, err)
	}
	frames := make([][]byte, 0, len(identities)+6)
	frames = append(frames, identities...)
	frames = append(frames, []byte(Delimiter), []byte(s.Sign(h, parent, md, c)), h, parent, md, c)
	return frames, nil
}

// NewHeader is a fresh header for a message of type msgType from session.
func NewHeader(msgType, session string) Header {
	return Header{
		MsgID:    NewID(),
		Session:  session,
		Username: "ragen",
		Date:     time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"),
		MsgType:  msgType,
		Version:  Version,
	}
}

// NewID is a random UUID (version 4).
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
