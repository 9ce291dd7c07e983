package tokenizer

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// Hand-checked splits: each case's pieces follow from reading the regex.
func TestSplitHandChecked(t *testing.T) {
	cases := []struct {
		p    Pattern
		in   string
		want []string
	}{
		// Contractions: GPT-2 is case-sensitive, Qwen2 is not.
		{PatternGPT2, "I'm DON'T", []string{"I", "'m", " DON", "'", "T"}},
		{PatternQwen2, "I'm DON'T", []string{"I", "'m", " DON", "'T"}},
		{PatternGPT2, "it's'll", []string{"it", "'s", "'ll"}},
		{PatternQwen2, "'sa", []string{"'s", "a"}},                               // the contraction wins over 'sa
		{PatternQwen2, "x'ſ", []string{"x", "'ſ"}},                               // ſ folds to s
		{PatternGPT2, "'hello", []string{"'", "hello"}},                          // not a contraction
		{PatternQwen2, "'hello", []string{"'hello"}},                             // one non-letter may lead a word
		{PatternQwen2, "(hello) _start", []string{"(hello", ")", " _", "start"}}, // " _" is not one optional char
		// Digits: runs in GPT-2, single in Qwen2, up to three in Llama 3.
		{PatternGPT2, "12345 67", []string{"12345", " 67"}},
		{PatternQwen2, "12345 67", []string{"1", "2", "3", "4", "5", " ", "6", "7"}},
		{PatternLlama3, "12345 67", []string{"123", "45", " ", "67"}},
		// \s+(?!\S): a run of spaces gives its last space to the next word.
		{PatternGPT2, "a   b", []string{"a", "  ", " b"}},
		{PatternGPT2, "a \t b", []string{"a", " \t", " b"}},
		{PatternGPT2, "x  ", []string{"x", "  "}},             // at the end the whole run
		{PatternGPT2, "a \tb", []string{"a", " ", "\t", "b"}}, // "\t" alone: \s+ without lookahead
		{PatternQwen2, "a   b", []string{"a", "  ", " b"}},
		{PatternQwen2, "a \tb", []string{"a", " ", "\tb"}}, // a tab may lead a word
		// Newlines.
		{PatternGPT2, "a\n\nb", []string{"a", "\n", "\n", "b"}},
		{PatternQwen2, "a\n\nb", []string{"a", "\n\n", "b"}},
		{PatternQwen2, "a\n  \n  b", []string{"a", "\n  \n", " ", " b"}}, // \s*[\r\n]+ stops after the last newline
		{PatternQwen2, "end.\n\nNext", []string{"end", ".\n\n", "Next"}}, // punctuation keeps its newlines
		{PatternQwen2, "\nhello", []string{"\n", "hello"}},               // a newline never leads a word
		{PatternGPT2, "line1\r\nline2", []string{"line", "1", "\r", "\n", "line", "2"}},
		// Grids and tags.
		{PatternGPT2, "#_X_P#\n", []string{"#_", "X", "_", "P", "#", "\n"}},
		{PatternQwen2, "#_X_P#\n", []string{"#_", "X", "_P", "#\n"}},
		{PatternQwen2, "<think>Right || Up", []string{"<think", ">Right", " ||", " Up"}},
		// Classes beyond ASCII: é decomposed has a combining mark (not \p{L}).
		{PatternGPT2, "e\u0301t 日本", []string{"e", "\u0301", "t", " 日本"}},
		{PatternGPT2, "a\u00a0b", []string{"a", "\u00a0", "b"}}, // NBSP is \s but not ' '
		// Bytes that are not UTF-8 form runs of "other".
		{PatternGPT2, "a\xff\xfeb \xff", []string{"a", "\xff\xfe", "b", " \xff"}},
	}
	for _, c := range cases {
		if got := c.p.Split(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v.Split(%q) = %q, want %q", c.p, c.in, got, c.want)
		}
	}
}

// TestSplitMatchesRegex compares the scanners with JavaScript's regex engine
// running the real patterns (testdata/gen_split.js).
func TestSplitMatchesRegex(t *testing.T) {
	data, err := os.ReadFile("testdata/split_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden []struct {
		Pattern string
		Input   string
		Pieces  []string
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	byName := map[string]Pattern{}
	for p, n := range patternNames {
		byName[n] = p
	}
	fails := 0
	for _, g := range golden {
		got := byName[g.Pattern].Split(g.Input)
		if len(g.Pieces) == 0 {
			g.Pieces = nil
		}
		if !reflect.DeepEqual(got, g.Pieces) && fails < 10 {
			fails++
			t.Errorf("%s.Split(%q) = %q, want %q", g.Pattern, g.Input, got, g.Pieces)
		}
	}
	if len(golden) < 900 {
		t.Errorf("only %d golden cases", len(golden))
	}
}

func TestPatternRegexRoundTrip(t *testing.T) {
	for p := range regex {
		if q, ok := patternOfRegex(p.Regex()); !ok || q != p {
			t.Errorf("patternOfRegex(%v.Regex()) = %v, %v", p, q, ok)
		}
		if strings.Contains(p.String(), "Pattern(") {
			t.Errorf("pattern %d has no name", int(p))
		}
	}
}
