package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sampleTexts exercise every part of an encoder.
var sampleTexts = []string{
	"<|im_start|>user\nTurn 1:\n#_X_P#\n<|im_end|>",
	"<think>The box is left of the target</think><answer>Right || Up</answer>",
	"I'm here, you're there: 12345 apples\n\n  indented\ttab",
	"日本語 emoji 😀 invalid \xff\xfe bytes",
}

func TestJSONRoundTrip(t *testing.T) {
	llama := spec{
		pattern: PatternLlama3, nfc: true, ignoreMerges: true, postByteLevel: true,
		unkToken: new("<unk>"),
		vocab:    byteVocab("ab", "abc", "ĠR", "<unk>"),
		merges:   [][2]string{{"a", "b"}, {"Ġ", "R"}},
		added:    []AddedToken{{ID: 300, Content: "<|eot|>", Special: true}, {ID: 301, Content: "<tag>", Normalized: true}},
	}
	for name, tok := range map[string]*Tokenizer{"trained": envTokenizer(t), "llama-like": mustTokenizer(t, llama)} {
		first, err := tok.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(first) {
			t.Fatalf("%s: MarshalJSON is not valid JSON", name)
		}
		back, err := FromJSON(first)
		if err != nil {
			t.Fatalf("%s: FromJSON(MarshalJSON()): %v", name, err)
		}
		second, _ := back.MarshalJSON()
		if !bytes.Equal(first, second) {
			t.Errorf("%s: load → save changed the file", name)
		}
		for _, s := range sampleTexts {
			if a, b := tok.Encode(s), back.Encode(s); !reflect.DeepEqual(a, b) {
				t.Errorf("%s: Encode(%q) = %v before the round trip, %v after", name, s, a, b)
			}
		}
		if !reflect.DeepEqual(tok.AddedTokens(), back.AddedTokens()) || tok.Pattern() != back.Pattern() || tok.VocabSize() != back.VocabSize() {
			t.Errorf("%s: added tokens, pattern or size changed in the round trip", name)
		}
	}
}

// TestJSONStringMerges loads merges written "a b", as older files do, and a
// GPT-2 style ByteLevel pre-tokenizer.
func TestJSONStringMerges(t *testing.T) {
	doc := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "normalizer": nil, "post_processor": nil,
		"added_tokens":  []any{map[string]any{"id": 258, "content": "<|endoftext|>", "special": true}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model": map[string]any{
			"type": "BPE", "vocab": byteVocab("Ġt", "Ġthe"), "merges": []any{"Ġ t", "Ġt h"},
		},
	}
	doc["model"].(map[string]any)["vocab"].(map[string]int)["Ġth"] = 259
	doc["model"].(map[string]any)["merges"] = []any{"Ġ t", "Ġt h", "Ġth e"}
	data, _ := json.Marshal(doc)
	tok, err := FromJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Pattern() != PatternGPT2 {
		t.Errorf("pattern %v, want gpt2", tok.Pattern())
	}
	if got := decodeAll(t, tok, tok.Encode("in the<|endoftext|>")); !reflect.DeepEqual(got, []string{"i", "n", " the", "<|endoftext|>"}) {
		t.Errorf("Encode: %q", got)
	}
}

func TestJSONErrors(t *testing.T) {
	base, err := mustTokenizer(t, spec{
		vocab: byteVocab("ab"), merges: [][2]string{{"a", "b"}}, pattern: PatternQwen2,
		added: []AddedToken{{ID: 300, Content: "<x>", Special: true}},
	}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FromJSON(base); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(doc map[string]any, model map[string]any)
		want   string
	}{
		{"model type", func(d, m map[string]any) { m["type"] = "WordPiece" }, `model type "WordPiece" is not supported (want BPE)`},
		{"no model", func(d, m map[string]any) { delete(d, "model") }, "model is missing"},
		{"no merges", func(d, m map[string]any) { delete(m, "merges") }, "model.merges is missing"},
		{"unknown merge token", func(d, m map[string]any) { m["merges"] = []any{[]any{"a", "zz"}} }, `model.merges[0]: "zz" is not in the vocab`},
		{"merge result missing", func(d, m map[string]any) { m["merges"] = []any{[]any{"a", "b"}, []any{"b", "c"}} }, `model.merges[1]: "b" + "c" makes "bc", which is not in the vocab`},
		{"bad merge string", func(d, m map[string]any) { m["merges"] = []any{"abc"} }, `model.merges[0]: "abc" is not two tokens separated by one space`},
		{"merge triple", func(d, m map[string]any) { m["merges"] = []any{[]any{"a", "b", "c"}} }, `model.merges[0]: ["a" "b" "c"] is not a pair`},
		{"merges object", func(d, m map[string]any) { m["merges"] = map[string]any{} }, `model.merges: want all "a b" strings or all ["a", "b"] pairs`},
		{"mixed merges", func(d, m map[string]any) { m["merges"] = []any{"a b", []any{"b", "c"}} }, `model.merges: want all "a b" strings or all ["a", "b"] pairs`},
		{"repeated merge", func(d, m map[string]any) { m["merges"] = []any{"a b", "a b"} }, `model.merges[1]: "a" "b" repeats merges[0]`},
		{"missing byte", func(d, m map[string]any) { delete(m["vocab"].(map[string]any), "Ġ") }, `model.vocab: no token for byte 0x20 ("Ġ")`},
		{"shared id", func(d, m map[string]any) { m["vocab"].(map[string]any)["ab"] = 0 }, `model.vocab: tokens "ab" and "Ā" share id 0`},
		{"byte fallback", func(d, m map[string]any) { m["byte_fallback"] = true }, "model.byte_fallback is not supported"},
		{"dropout", func(d, m map[string]any) { m["dropout"] = 0.1 }, "model.dropout 0.1 is not supported"},
		{"normalizer", func(d, m map[string]any) { d["normalizer"] = map[string]any{"type": "NFKC"} }, `normalizer "NFKC" is not supported (want null or NFC)`},
		{"pre-tokenizer type", func(d, m map[string]any) { d["pre_tokenizer"] = map[string]any{"type": "Metaspace"} }, `pre_tokenizer "Metaspace" is not supported here (want ByteLevel)`},
		{"pre-tokenizer null", func(d, m map[string]any) { d["pre_tokenizer"] = nil }, "pre_tokenizer null is not supported"},
		{"prefix space", func(d, m map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true}
		}, "add_prefix_space missing or true is not supported"},
		{"unknown regex", func(d, m map[string]any) {
			d["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": `\w+`}
		}, `pre_tokenizer Split regex "\\w+" is not supported`},
		{"split behavior", func(d, m map[string]any) {
			d["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["behavior"] = "Removed"
		}, `pre_tokenizer Split with behavior "Removed", invert false is not supported`},
		{"sequence", func(d, m map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{map[string]any{"type": "Digits"}}}
		}, "pre_tokenizer Sequence[Digits] is not supported (want [Split ByteLevel])"},
		{"decoder", func(d, m map[string]any) { d["decoder"] = map[string]any{"type": "WordPiece"} }, `decoder "WordPiece" is not supported (want ByteLevel)`},
		{"no decoder", func(d, m map[string]any) { delete(d, "decoder") }, "decoder null is not supported"},
		{"post-processor", func(d, m map[string]any) { d["post_processor"] = map[string]any{"type": "TemplateProcessing"} }, `post_processor "TemplateProcessing" is not supported`},
		{"truncation", func(d, m map[string]any) { d["truncation"] = map[string]any{"max_length": 512} }, "truncation is not supported"},
		{"lstrip", func(d, m map[string]any) { d["added_tokens"].([]any)[0].(map[string]any)["lstrip"] = true }, `added_tokens[0] "<x>": single_word, lstrip and rstrip are not supported`},
		{"added id clash", func(d, m map[string]any) { d["added_tokens"].([]any)[0].(map[string]any)["id"] = 65 }, `added_tokens: "<x>" has id 65, which the vocab gives to "A"`},
		{"added without id", func(d, m map[string]any) { delete(d["added_tokens"].([]any)[0].(map[string]any), "id") }, `added_tokens[0] "<x>" has no id`},
	}
	for _, c := range cases {
		var doc map[string]any
		if err := json.Unmarshal(base, &doc); err != nil {
			t.Fatal(err)
		}
		model, _ := doc["model"].(map[string]any)
		c.mutate(doc, model)
		data, _ := json.Marshal(doc)
		_, err := FromJSON(data)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "tokenizer: invalid tokenizer.json: ") {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	if _, err := FromJSON([]byte(`{"model": `)); err == nil || !strings.Contains(err.Error(), "invalid tokenizer.json: unexpected end of JSON input") {
		t.Errorf("truncated JSON: error %v", err)
	}
}

func TestLoadSave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	tok := envTokenizer(t)
	if err := tok.Save(path); err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(path); err != nil { // over an existing file
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("Save left %d files in the directory, want 1", len(entries))
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sampleTexts {
		if a, b := tok.Encode(s), back.Encode(s); !reflect.DeepEqual(a, b) {
			t.Errorf("Encode(%q) differs after Save/Load", s)
		}
	}
	data, _ := os.ReadFile(path)
	truncated := filepath.Join(dir, "truncated.json")
	os.WriteFile(truncated, data[:len(data)/2], 0o644)
	if _, err := Load(truncated); err == nil || !strings.Contains(err.Error(), "cannot load "+truncated) {
		t.Errorf("Load(truncated) error = %v, want it to name the file", err)
	}
	missing := filepath.Join(dir, "none", "tokenizer.json")
	if err := tok.Save(missing); err == nil || !strings.Contains(err.Error(), "cannot write "+missing) {
		t.Errorf("Save into a missing directory: error = %v", err)
	}
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), "cannot load "+missing) {
		t.Errorf("Load(missing) error = %v", err)
	}
}
