package tokenizer

import (
	"fmt"
	"sort"
	"strings"
)

// AddedToken is a token matched in the raw text before pre-tokenization and
// never split (Hugging Face's added_tokens).
type AddedToken struct {
	ID      int
	Content string
	// Special marks control tokens (<|im_end|>, <|endoftext|>) as opposed to
	// text-like tags (<think>); Hugging Face skips special tokens when asked
	// to. Both kinds are matched and encoded the same way.
	Special bool
	// Normalized is tokenizer.json's flag, kept for round trips. Matching is
	// always on the raw text; this differs from Hugging Face only for a
	// normalized token whose content the normaliser changes (none under NFC
	// is ASCII).
	Normalized bool
}

// Tokenizer is a byte-level BPE tokenizer. It is immutable once built and
// safe for concurrent use.
type Tokenizer struct {
	pattern       Pattern
	nfc           bool    // normalizer NFC
	ignoreMerges  bool    // a word found whole in the vocab is one token
	postByteLevel bool    // post_processor ByteLevel (written back on save)
	unkToken      *string // model.unk_token, kept for round trips (never used: every byte has a token)

	vocab     map[string]int // model vocabulary in byte-level form
	mergeList [][2]int32     // merge pairs by rank
	merges    map[uint64]merge
	byteID    [256]int32 // token of each single byte

	added      []AddedToken   // by id
	addedID    map[string]int // content → id
	addedFirst [256][]int     // indices into added by first byte, longest first
	addedByte  int            // the first byte of every added token if they share one (often '<'), else -1

	tokens []string // id → vocabulary form or added content; "" where unused
	text   []string // id → the bytes Decode writes
	used   []bool   // id has a token

	cache wordCache
}

// spec is everything that defines a tokenizer; both FromJSON and Train
// build one through newTokenizer, which validates it.
type spec struct {
	pattern       Pattern
	nfc           bool
	ignoreMerges  bool
	postByteLevel bool
	unkToken      *string
	vocab         map[string]int
	merges        [][2]string
	added         []AddedToken
}

func newTokenizer(sp spec) (*Tokenizer, error) {
	if !sp.pattern.valid() {
		return nil, fmt.Errorf("unknown pre-tokenizer pattern %v", sp.pattern)
	}
	t := &Tokenizer{
		pattern: sp.pattern, nfc: sp.nfc, ignoreMerges: sp.ignoreMerges,
		postByteLevel: sp.postByteLevel, unkToken: sp.unkToken,
		vocab: sp.vocab, merges: make(map[uint64]merge, len(sp.merges)),
		addedID: make(map[string]int, len(sp.added)),
	}
	size := 0
	for tok, id := range sp.vocab {
		if id < 0 {
			return nil, fmt.Errorf("model.vocab: token %q has negative id %d", tok, id)
		}
		size = max(size, id+1)
	}
	for _, a := range sp.added {
		if a.ID < 0 {
			return nil, fmt.Errorf("added_tokens: %q has negative id %d", a.Content, a.ID)
		}
		size = max(size, a.ID+1)
	}
	t.tokens = make([]string, size)
	t.text = make([]string, size)
	t.used = make([]bool, size)
	for tok, id := range sp.vocab {
		if t.used[id] {
			a, b := min(tok, t.tokens[id]), max(tok, t.tokens[id])
			return nil, fmt.Errorf("model.vocab: tokens %q and %q share id %d", a, b, id)
		}
		t.used[id] = true
		t.tokens[id] = tok
		raw, ok := fromByteLevel(tok)
		if !ok {
			raw = tok // as Hugging Face's ByteLevel decoder does
		}
		t.text[id] = raw
	}
	for b := 0; b < 256; b++ {
		tok := string(byteRune[b])
		id, ok := sp.vocab[tok]
		if !ok {
			return nil, fmt.Errorf("model.vocab: no token for byte 0x%02x (%q): a byte-level vocabulary needs all 256", b, tok)
		}
		t.byteID[b] = int32(id)
	}
	t.mergeList = make([][2]int32, len(sp.merges))
	for i, m := range sp.merges {
		a, okA := sp.vocab[m[0]]
		b, okB := sp.vocab[m[1]]
		switch {
		case !okA:
			return nil, fmt.Errorf("model.merges[%d]: %q is not in the vocab", i, m[0])
		case !okB:
			return nil, fmt.Errorf("model.merges[%d]: %q is not in the vocab", i, m[1])
		}
		id, ok := sp.vocab[m[0]+m[1]]
		if !ok {
			return nil, fmt.Errorf("model.merges[%d]: %q + %q makes %q, which is not in the vocab", i, m[0], m[1], m[0]+m[1])
		}
		k := pairKey(int32(a), int32(b))
		if prev, dup := t.merges[k]; dup {
			return nil, fmt.Errorf("model.merges[%d]: %q %q repeats merges[%d]", i, m[0], m[1], prev.rank)
		}
		t.merges[k] = merge{rank: int32(i), id: int32(id)}
		t.mergeList[i] = [2]int32{int32(a), int32(b)}
	}
	t.added = append([]AddedToken(nil), sp.added...)
	sort.Slice(t.added, func(i, j int) bool { return t.added[i].ID < t.added[j].ID })
	for i, a := range t.added {
		switch {
		case a.Content == "":
			return nil, fmt.Errorf("added_tokens: id %d has empty content", a.ID)
		case i > 0 && t.added[i-1].ID == a.ID:
			return nil, fmt.Errorf("added_tokens: %q and %q share id %d", t.added[i-1].Content, a.Content, a.ID)
		}
		if prev, dup := t.addedID[a.Content]; dup {
			return nil, fmt.Errorf("added_tokens: %q appears twice (ids %d and %d)", a.Content, prev, a.ID)
		}
		if t.used[a.ID] && t.tokens[a.ID] != a.Content {
			return nil, fmt.Errorf("added_tokens: %q has id %d, which the vocab gives to %q", a.Content, a.ID, t.tokens[a.ID])
		}
		if id, ok := sp.vocab[a.Content]; ok && id != a.ID {
			return nil, fmt.Errorf("added_tokens: %q has id %d but id %d in the vocab", a.Content, a.ID, id)
		}
		t.addedID[a.Content] = a.ID
		t.used[a.ID] = true
		t.tokens[a.ID] = a.Content
		t.text[a.ID] = a.Content
		t.addedFirst[a.Content[0]] = append(t.addedFirst[a.Content[0]], i)
	}
	t.addedByte = -1
	for b := range t.addedFirst {
		c := t.addedFirst[b]
		sort.SliceStable(c, func(i, j int) bool { return len(t.added[c[i]].Content) > len(t.added[c[j]].Content) })
		if len(c) == len(t.added) {
			t.addedByte = b
		}
	}
	return t, nil
}

// Encode returns the token ids of s: added tokens matched first (leftmost,
// then longest), the text between them split and merged by BPE.
func (t *Tokenizer) Encode(s string) []int {
	ids := make([]int, 0, len(s)/3+1)
	for len(s) > 0 {
		pos, a := t.findAdded(s)
		if pos < 0 {
			return t.appendOrdinary(ids, s)
		}
		ids = t.appendOrdinary(ids, s[:pos])
		ids = append(ids, t.added[a].ID)
		s = s[pos+len(t.added[a].Content):]
	}
	return ids
}

// EncodeOrdinary encodes s as plain text: added tokens in it are not
// matched but split like any text. Use it for untrusted text that must not
// be able to inject a role marker.
func (t *Tokenizer) EncodeOrdinary(s string) []int {
	return t.appendOrdinary(make([]int, 0, len(s)/3+1), s)
}

// findAdded returns the byte position of the leftmost added token in s and
// its index in t.added (the longest at that position), or -1, -1.
func (t *Tokenizer) findAdded(s string) (int, int) {
	if len(t.added) == 0 {
		return -1, -1
	}
	for i := 0; i < len(s); i++ {
		if t.addedByte >= 0 { // skip to the next candidate with a vectorised search
			j := strings.IndexByte(s[i:], byte(t.addedByte))
			if j < 0 {
				break
			}
			i += j
		}
		for _, a := range t.addedFirst[s[i]] {
			if strings.HasPrefix(s[i:], t.added[a].Content) {
				return i, a
			}
		}
	}
	return -1, -1
}

// appendOrdinary appends the tokens of s, which holds no added token.
func (t *Tokenizer) appendOrdinary(ids []int, s string) []int {
	if t.nfc {
		s = nfc(s)
	}
	for len(s) > 0 {
		n := t.pattern.next(s)
		ids = t.appendWord(ids, s[:n])
		s = s[n:]
	}
	return ids
}

// Decode returns the bytes the tokens stand for. It fails on an id that is
// out of range or names no token.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	n := 0
	for i, id := range ids {
		if id < 0 || id >= len(t.tokens) || !t.used[id] {
			return "", fmt.Errorf("tokenizer: cannot decode token %d at position %d: not in the vocabulary [0, %d)", id, i, len(t.tokens))
		}
		n += len(t.text[id])
	}
	var b strings.Builder
	b.Grow(n)
	for _, id := range ids {
		b.WriteString(t.text[id])
	}
	return b.String(), nil
}

// VocabSize is one more than the largest token id: the size an embedding
// table needs.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Token returns token id as the vocabulary writes it (byte-level form, e.g.
// "ĠRight" for " Right"; an added token's content), or "" if there is none.
func (t *Tokenizer) Token(id int) string {
	if id < 0 || id >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// TokenID returns the id of a token written as the vocabulary writes it
// (see Token); added tokens first.
func (t *Tokenizer) TokenID(tok string) (int, bool) {
	if id, ok := t.addedID[tok]; ok {
		return id, true
	}
	id, ok := t.vocab[tok]
	return id, ok
}

// AddedTokens returns the added tokens, by id.
func (t *Tokenizer) AddedTokens() []AddedToken { return append([]AddedToken(nil), t.added...) }

// Pattern returns the pre-tokenizer split pattern.
func (t *Tokenizer) Pattern() Pattern { return t.pattern }

// The added tokens every trained vocabulary has (ChatML role markers, the
// end/padding token, reasoning and answer tags).
const (
	EndOfText   = "<|endoftext|>"
	ImStart     = "<|im_start|>"
	ImEnd       = "<|im_end|>"
	ThinkStart  = "<think>"
	ThinkEnd    = "</think>"
	AnswerStart = "<answer>"
	AnswerEnd   = "</answer>"
)

// Their ids in every vocabulary Train builds.
const (
	EndOfTextID = iota
	ImStartID
	ImEndID
	ThinkStartID
	ThinkEndID
	AnswerStartID
	AnswerEndID
)

// fixedAdded lists Train's fixed added tokens in id order. The tags are not
// "special" (they are text the policy writes and environments parse), as in
// Qwen3's vocabulary.
var fixedAdded = []AddedToken{
	{ID: EndOfTextID, Content: EndOfText, Special: true},
	{ID: ImStartID, Content: ImStart, Special: true},
	{ID: ImEndID, Content: ImEnd, Special: true},
	{ID: ThinkStartID, Content: ThinkStart},
	{ID: ThinkEndID, Content: ThinkEnd},
	{ID: AnswerStartID, Content: AnswerStart},
	{ID: AnswerEndID, Content: AnswerEnd},
}

// SpecialIDs holds the ids of the role markers and tags in a tokenizer;
// -1 where the tokenizer has no such added token (Qwen2.5 has no <think>).
type SpecialIDs struct {
	EndOfText, ImStart, ImEnd, ThinkStart, ThinkEnd, AnswerStart, AnswerEnd int
}

// SpecialIDs looks up the role markers and tags among the added tokens.
func (t *Tokenizer) SpecialIDs() SpecialIDs {
	id := func(s string) int {
		if id, ok := t.addedID[s]; ok {
			return id
		}
		return -1
	}
	return SpecialIDs{
		EndOfText: id(EndOfText), ImStart: id(ImStart), ImEnd: id(ImEnd),
		ThinkStart: id(ThinkStart), ThinkEnd: id(ThinkEnd),
		AnswerStart: id(AnswerStart), AnswerEnd: id(AnswerEnd),
	}
}
