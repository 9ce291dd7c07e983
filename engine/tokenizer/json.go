package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/ragen-go/ragen/internal/atomicfile"
)

// The tokenizer.json schema, as far as byte-level BPE uses it. Fields are
// pointers or raw where "absent", null and a value must be told apart.
type fileJSON struct {
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	AddedTokens   []addedJSON     `json:"added_tokens"`
	Normalizer    *componentJSON  `json:"normalizer"`
	PreTokenizer  *componentJSON  `json:"pre_tokenizer"`
	PostProcessor *componentJSON  `json:"post_processor"`
	Decoder       *componentJSON  `json:"decoder"`
	Model         *modelJSON      `json:"model"`
}

type addedJSON struct {
	ID         *int   `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// componentJSON holds the fields of the normalizer, pre-tokenizer,
// post-processor and decoder kinds we accept.
type componentJSON struct {
	Type           string          `json:"type"`
	AddPrefixSpace *bool           `json:"add_prefix_space"` // ByteLevel; must be false
	UseRegex       *bool           `json:"use_regex"`        // ByteLevel; default true
	Pattern        *splitPattern   `json:"pattern"`          // Split
	Behavior       string          `json:"behavior"`         // Split
	Invert         bool            `json:"invert"`           // Split
	Pretokenizers  []componentJSON `json:"pretokenizers"`    // Sequence
}

type splitPattern struct {
	Regex *string `json:"Regex"` // the other kind, String, is not supported
}

type modelJSON struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

// parseMerges reads model.merges, written either as "a b" strings (older
// files) or as ["a", "b"] pairs (newer ones), not both in one file.
// Decoding the whole list in one call keeps loading 150k merges fast.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '[' && bytes.HasPrefix(bytes.TrimSpace(trimmed[1:]), []byte(`"`)) {
		var strs []string
		if err := json.Unmarshal(raw, &strs); err != nil {
			return nil, fmt.Errorf("model.merges: want all \"a b\" strings or all [\"a\", \"b\"] pairs: %w", err)
		}
		merges := make([][2]string, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok || a == "" || b == "" || strings.Contains(b, " ") {
				return nil, fmt.Errorf("model.merges[%d]: %q is not two tokens separated by one space", i, s)
			}
			merges[i] = [2]string{a, b}
		}
		return merges, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("model.merges: want all \"a b\" strings or all [\"a\", \"b\"] pairs: %w", err)
	}
	merges := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("model.merges[%d]: %q is not a pair", i, p)
		}
		merges[i] = [2]string{p[0], p[1]}
	}
	return merges, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// FromJSON builds a tokenizer from the contents of a Hugging Face
// tokenizer.json. It accepts byte-level BPE: model BPE, pre_tokenizer
// ByteLevel or Sequence[Split(known regex), ByteLevel(use_regex=false)],
// decoder ByteLevel, normalizer null or NFC, post_processor null or
// ByteLevel; anything else is an error that names the component.
func FromJSON(data []byte) (*Tokenizer, error) {
	t, err := fromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: invalid tokenizer.json: %w", err)
	}
	return t, nil
}

func fromJSON(data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if !isNull(f.Truncation) {
		return nil, fmt.Errorf("truncation is not supported (want null)")
	}
	if !isNull(f.Padding) {
		return nil, fmt.Errorf("padding is not supported (want null)")
	}
	m := f.Model
	switch {
	case m == nil:
		return nil, fmt.Errorf("model is missing")
	case m.Type != "BPE":
		return nil, fmt.Errorf("model type %q is not supported (want BPE)", m.Type)
	case m.Vocab == nil:
		return nil, fmt.Errorf("model.vocab is missing")
	case isNull(m.Merges):
		return nil, fmt.Errorf("model.merges is missing")
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, fmt.Errorf("model.dropout %g is not supported (want null)", *m.Dropout)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "":
		return nil, fmt.Errorf("model.continuing_subword_prefix %q is not supported (want empty)", *m.ContinuingSubwordPrefix)
	case m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, fmt.Errorf("model.end_of_word_suffix %q is not supported (want empty)", *m.EndOfWordSuffix)
	case m.ByteFallback:
		return nil, fmt.Errorf("model.byte_fallback is not supported (byte-level BPE needs no fallback)")
	}
	sp := spec{unkToken: m.UnkToken, ignoreMerges: m.IgnoreMerges, vocab: m.Vocab}
	var err error
	if sp.merges, err = parseMerges(m.Merges); err != nil {
		return nil, err
	}
	if sp.nfc, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if sp.pattern, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if sp.postByteLevel, err = parsePostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	if f.Decoder == nil || f.Decoder.Type != "ByteLevel" {
		return nil, fmt.Errorf("decoder %s is not supported (want ByteLevel)", describe(f.Decoder))
	}
	for i, a := range f.AddedTokens {
		switch {
		case a.ID == nil:
			return nil, fmt.Errorf("added_tokens[%d] %q has no id", i, a.Content)
		case a.SingleWord || a.LStrip || a.RStrip:
			return nil, fmt.Errorf("added_tokens[%d] %q: single_word, lstrip and rstrip are not supported (want false)", i, a.Content)
		}
		sp.added = append(sp.added, AddedToken{ID: *a.ID, Content: a.Content, Special: a.Special, Normalized: a.Normalized})
	}
	return newTokenizer(sp)
}

func describe(c *componentJSON) string {
	if c == nil {
		return "null"
	}
	return fmt.Sprintf("%q", c.Type)
}

func parseNormalizer(c *componentJSON) (nfc bool, err error) {
	switch {
	case c == nil:
		return false, nil
	case c.Type == "NFC":
		return true, nil
	}
	return false, fmt.Errorf("normalizer %s is not supported (want null or NFC)", describe(c))
}

func parsePostProcessor(c *componentJSON) (byteLevel bool, err error) {
	switch {
	case c == nil:
		return false, nil
	case c.Type == "ByteLevel":
		return true, nil
	}
	return false, fmt.Errorf("post_processor %s is not supported (want null or ByteLevel)", describe(c))
}

// parsePreTokenizer recognises ByteLevel(use_regex=true), which splits with
// GPT-2's regex, and Sequence[Split(regex, Isolated), ByteLevel(use_regex=false)].
func parsePreTokenizer(c *componentJSON) (Pattern, error) {
	if c == nil {
		return 0, fmt.Errorf("pre_tokenizer null is not supported (want ByteLevel)")
	}
	byteLevel := func(c componentJSON, useRegex bool) error {
		if c.Type != "ByteLevel" {
			return fmt.Errorf("pre_tokenizer %q is not supported here (want ByteLevel)", c.Type)
		}
		if c.AddPrefixSpace == nil || *c.AddPrefixSpace {
			return fmt.Errorf("pre_tokenizer ByteLevel: add_prefix_space missing or true is not supported (want false)")
		}
		if got := c.UseRegex == nil || *c.UseRegex; got != useRegex {
			return fmt.Errorf("pre_tokenizer ByteLevel with use_regex %v is not supported here (want %v)", got, useRegex)
		}
		return nil
	}
	if c.Type != "Sequence" {
		if err := byteLevel(*c, true); err != nil {
			return 0, err
		}
		return PatternGPT2, nil
	}
	if len(c.Pretokenizers) != 2 || c.Pretokenizers[0].Type != "Split" {
		types := make([]string, len(c.Pretokenizers))
		for i, p := range c.Pretokenizers {
			types[i] = p.Type
		}
		return 0, fmt.Errorf("pre_tokenizer Sequence%v is not supported (want [Split ByteLevel])", types)
	}
	split := c.Pretokenizers[0]
	if split.Pattern == nil || split.Pattern.Regex == nil {
		return 0, fmt.Errorf("pre_tokenizer Split needs a Regex pattern")
	}
	if split.Behavior != "Isolated" || split.Invert {
		return 0, fmt.Errorf("pre_tokenizer Split with behavior %q, invert %v is not supported (want Isolated, false)", split.Behavior, split.Invert)
	}
	p, ok := patternOfRegex(*split.Pattern.Regex)
	if !ok {
		return 0, fmt.Errorf("pre_tokenizer Split regex %q is not supported (known: the gpt2, qwen2 and llama3 patterns)", *split.Pattern.Regex)
	}
	if err := byteLevel(c.Pretokenizers[1], false); err != nil {
		return 0, err
	}
	return p, nil
}

// Load reads a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: cannot load %s: %w", path, err)
	}
	t, err := fromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: cannot load %s: %w", path, err)
	}
	return t, nil
}

// Save writes the tokenizer as tokenizer.json, atomically: to a temporary
// file in the same directory, then renamed over path.
func (t *Tokenizer) Save(path string) error {
	data, err := t.MarshalJSON()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	return nil
}

// MarshalJSON writes the tokenizer in Hugging Face's tokenizer.json format:
// one added token, vocab entry or merge per line, vocab in id order, so the
// output is deterministic and diffs well.
func (t *Tokenizer) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	q := func(s string) string { // a JSON string, without HTML escaping
		if plainJSON(s) {
			return `"` + s + `"`
		}
		var sb strings.Builder
		enc := json.NewEncoder(&sb)
		enc.SetEscapeHTML(false)
		enc.Encode(s) // a string always encodes
		return strings.TrimSuffix(sb.String(), "\n")
	}
	b.WriteString("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for i, a := range t.added {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n    {\"id\": %d, \"content\": %s, \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": %v, \"special\": %v}",
			a.ID, q(a.Content), a.Normalized, a.Special)
	}
	b.WriteString("\n  ],\n  \"normalizer\": ")
	if t.nfc {
		b.WriteString(`{"type": "NFC"}`)
	} else {
		b.WriteString("null")
	}
	b.WriteString(",\n  \"pre_tokenizer\": ")
	if t.pattern == PatternGPT2 {
		b.WriteString(`{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}`)
	} else {
		fmt.Fprintf(&b, `{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": %s}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]}`, q(t.pattern.Regex()))
	}
	b.WriteString(",\n  \"post_processor\": ")
	if t.postByteLevel {
		b.WriteString(`{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}`)
	} else {
		b.WriteString("null")
	}
	b.WriteString(",\n  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false},\n")
	unk := "null"
	if t.unkToken != nil {
		unk = q(*t.unkToken)
	}
	fmt.Fprintf(&b, "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": %s,\n    \"continuing_subword_prefix\": \"\",\n    \"end_of_word_suffix\": \"\",\n    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"ignore_merges\": %v,\n    \"vocab\": {", unk, t.ignoreMerges)
	ids := make([]int, 0, len(t.vocab))
	for _, id := range t.vocab {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n      %s: %d", q(t.tokens[id]), id)
	}
	b.WriteString("\n    },\n    \"merges\": [")
	for i, m := range t.mergeList {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n      [%s, %s]", q(t.tokens[m[0]]), q(t.tokens[m[1]]))
	}
	b.WriteString("\n    ]\n  }\n}\n")
	return b.Bytes(), nil
}

// plainJSON reports whether s can be written as a JSON string by quoting
// it alone: printable ASCII without '"' or '\\'.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7F || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
