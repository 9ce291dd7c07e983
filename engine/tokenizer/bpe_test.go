package tokenizer

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// bpeNaive is the test oracle for bpe: after every merge it rescans the
// whole word for the lowest-ranked pair, leftmost on ties. O(n²).
func (t *Tokenizer) bpeNaive(w string) []int {
	toks := make([]int32, len(w))
	for i := 0; i < len(w); i++ {
		toks[i] = t.byteID[w[i]]
	}
	for {
		best := -1
		var bm merge
		for i := 0; i+1 < len(toks); i++ {
			if m, ok := t.merges[pairKey(toks[i], toks[i+1])]; ok && (best < 0 || m.rank < bm.rank) {
				best, bm = i, m
			}
		}
		if best < 0 {
			break
		}
		toks[best] = bm.id
		toks = slices.Delete(toks, best+1, best+2)
	}
	out := make([]int, len(toks))
	for i, id := range toks {
		out[i] = int(id)
	}
	return out
}

func TestMergesInRankOrder(t *testing.T) {
	cases := []struct {
		merges [][2]string
		extra  []string
		word   string
		want   []string
	}{
		// (b,c) outranks (a,b), so "abc" is a + bc, then abc.
		{[][2]string{{"b", "c"}, {"a", "b"}, {"a", "bc"}}, []string{"ab", "bc", "abc"}, "abc", []string{"abc"}},
		// (a,b) first; then nothing joins ab and c.
		{[][2]string{{"a", "b"}, {"b", "c"}}, []string{"ab", "bc"}, "abc", []string{"ab", "c"}},
		{[][2]string{{"a", "b"}, {"b", "c"}}, []string{"ab", "bc"}, "abcbc", []string{"ab", "c", "bc"}},
		// Equal ranks: leftmost first.
		{[][2]string{{"a", "a"}}, []string{"aa"}, "aaa", []string{"aa", "a"}},
		{[][2]string{{"a", "a"}, {"aa", "aa"}}, []string{"aa", "aaaa"}, "aaaaa", []string{"aaaa", "a"}},
		// A later merge can use a token made by an earlier one.
		{[][2]string{{"Ġ", "R"}, {"i", "g"}, {"ig", "h"}, {"igh", "t"}, {"ĠR", "ight"}}, []string{"ĠR", "ig", "igh", "ight", "ĠRight"}, " Right", []string{" Right"}},
	}
	for _, c := range cases {
		tok := mustTokenizer(t, spec{vocab: byteVocab(c.extra...), merges: c.merges})
		got := decodeAll(t, tok, tok.Encode(c.word))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("merges %q: Encode(%q) = %q, want %q", c.merges, c.word, got, c.want)
		}
	}
}

// TestBPEMatchesNaive checks the heap against the naive twin on random
// words, with the trained merges and with their ranks reversed (so that
// merges fire in an order training never produces).
func TestBPEMatchesNaive(t *testing.T) {
	trained := envTokenizer(t)
	var merges [][2]string
	for _, m := range trained.mergeList {
		merges = append(merges, [2]string{trained.tokens[m[0]], trained.tokens[m[1]]})
	}
	slices.Reverse(merges)
	reversed := mustTokenizer(t, spec{vocab: trained.vocab, merges: merges, pattern: PatternQwen2})
	r := rand.New(rand.NewPCG(1, 2))
	letters := "#_OXP RightUpDownLeftthebox"
	for _, tok := range []*Tokenizer{trained, reversed} {
		for i := 0; i < 2000; i++ {
			w := make([]byte, 1+r.IntN(40))
			for j := range w {
				w[j] = letters[r.IntN(len(letters))]
			}
			if got, want := tok.bpe(string(w)), tok.bpeNaive(string(w)); !reflect.DeepEqual(got, want) {
				t.Fatalf("bpe(%q) = %v, naive %v", w, got, want)
			}
		}
	}
}
