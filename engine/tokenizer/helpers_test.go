package tokenizer

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// envCorpus returns n conversations like the environments produce: ChatML
// turns with Sokoban grids, reasoning in <think> and actions in <answer>.
func envCorpus(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	glyphs := []string{"_", "_", "_", "#", "O", "X", "P", "√"}
	actions := []string{"Up", "Down", "Left", "Right"}
	thoughts := []string{
		"The box is left of the target", "I should push the box up", "The player is above the box",
		"Move around the wall first", "The target is to the right of the box", "Push it down twice",
		"I need 2 more steps", "The box is stuck against the wall, so go back",
	}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		b.WriteString("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n")
		for turn := 1; turn <= 1+r.IntN(3); turn++ {
			if turn > 1 {
				b.WriteString("<|im_start|>user\nReward: -0.1\n")
			}
			b.WriteString("Turn ")
			b.WriteString(string(rune('0' + turn)))
			b.WriteString(":\nState:\n")
			for row := 0; row < 6; row++ {
				for col := 0; col < 6; col++ {
					if row == 0 || row == 5 || col == 0 || col == 5 {
						b.WriteString("#")
					} else {
						b.WriteString(glyphs[r.IntN(len(glyphs))])
					}
				}
				b.WriteString("\n")
			}
			b.WriteString("Decide your next action(s).<|im_end|>\n<|im_start|>assistant\n<think>")
			b.WriteString(thoughts[r.IntN(len(thoughts))])
			b.WriteString(".</think><answer>")
			for k := 0; k <= r.IntN(3); k++ {
				if k > 0 {
					b.WriteString(" || ")
				}
				b.WriteString(actions[r.IntN(len(actions))])
			}
			b.WriteString("</answer><|im_end|>\n")
		}
		b.WriteString("<|endoftext|>")
		out[i] = b.String()
	}
	return out
}

var envTok = sync.OnceValues(func() (*Tokenizer, error) {
	return Train(envCorpus(400, 7), TrainConfig{VocabSize: 512})
})

// envTokenizer is a 512-token vocabulary trained on envCorpus, shared by
// the tests.
func envTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := envTok()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// byteVocab returns a vocabulary of the 256 byte tokens (ids in byte order)
// plus extra tokens (byte-level form) after them.
func byteVocab(extra ...string) map[string]int {
	v := map[string]int{}
	for b := 0; b < 256; b++ {
		v[string(byteRune[b])] = b
	}
	for _, e := range extra {
		v[e] = len(v)
	}
	return v
}

// mustTokenizer builds a tokenizer from a spec or fails the test.
func mustTokenizer(t testing.TB, sp spec) *Tokenizer {
	t.Helper()
	if sp.pattern == 0 {
		sp.pattern = PatternGPT2
	}
	tok, err := newTokenizer(sp)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// decodeAll decodes ids into one string per token.
func decodeAll(t testing.TB, tok *Tokenizer, ids []int) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		s, err := tok.Decode([]int{id})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	return out
}
