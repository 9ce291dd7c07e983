package tokenizer

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// TestTrainGolden pins the trained vocabulary: the same corpus gives the
// same tokenizer.json bytes, today and after any change to the code.
// Regenerate with: go test ./engine/tokenizer -run TestTrainGolden -update
func TestTrainGolden(t *testing.T) {
	got, err := envTokenizer(t).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/env512.tokenizer.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("trained tokenizer differs from %s (run with -update if the change is intended)", golden)
	}
}

func TestTrainDeterministic(t *testing.T) {
	corpus := envCorpus(100, 3)
	a, err := Train(corpus, TrainConfig{VocabSize: 400})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Train(corpus, TrainConfig{VocabSize: 400})
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	if !bytes.Equal(ja, jb) {
		t.Error("two trainings on the same corpus differ")
	}
	if a.VocabSize() != 400 {
		t.Errorf("VocabSize() = %d, want 400", a.VocabSize())
	}
}

func TestTrainEnvWholeWords(t *testing.T) {
	tok := envTokenizer(t)
	if tok.VocabSize() != 512 {
		t.Errorf("VocabSize() = %d, want 512", tok.VocabSize())
	}
	for _, s := range []string{"Right", " Right", " Up", "<think>", "</answer>", "<|im_start|>", "#\n", " box"} {
		if ids := tok.Encode(s); len(ids) != 1 {
			t.Errorf("Encode(%q) = %v (%q), want one token", s, ids, decodeAll(t, tok, ids))
		}
	}
	text := "<think>The box is left of the target</think><answer>Right || Up</answer>"
	ids := tok.Encode(text)
	if len(ids) > 16 {
		t.Errorf("Encode(%q) takes %d tokens, want ≤ 16: %q", text, len(ids), decodeAll(t, tok, ids))
	}
	if ids[0] != ThinkStartID || ids[len(ids)-1] != AnswerEndID {
		t.Errorf("Encode(%q) = %v: want <think> first and </answer> last", text, ids)
	}
}

func TestTrainStopsAtMinFrequency(t *testing.T) {
	tok, err := Train([]string{"abab abab xyz"}, TrainConfig{VocabSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// Pairs seen at least twice: (a,b) → ab, (ab,ab) → abab, (Ġ,abab) seen once.
	if got, want := tok.VocabSize(), len(fixedAdded)+256+2; got != want {
		t.Errorf("VocabSize() = %d, want %d", got, want)
	}
	empty, err := Train(nil, TrainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if empty.VocabSize() != len(fixedAdded)+256 {
		t.Errorf("Train(nil) has %d tokens, want the added and byte tokens only", empty.VocabSize())
	}
}

func TestTrainNeverMergesIntoAddedToken(t *testing.T) {
	tok, err := Train([]string{"xab abc abd ab ab", "cab cab"}, TrainConfig{Added: []string{"ab"}})
	if err != nil {
		t.Fatal(err)
	}
	ab := len(fixedAdded)
	if got := tok.Encode("ab"); len(got) != 1 || got[0] != ab {
		t.Errorf("Encode(ab) = %v, want [%d]", got, ab)
	}
	for _, s := range []string{"ab", "cab", "abd", "xabx"} {
		for _, id := range tok.EncodeOrdinary(s) {
			if id == ab {
				t.Errorf("EncodeOrdinary(%q) yields the added token", s)
			}
		}
	}
}

func TestTrainConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  TrainConfig
		want string
	}{
		{TrainConfig{VocabSize: 100}, "TrainConfig.VocabSize: must be ≥ 263 (7 added tokens + 256 bytes) (got 100)"},
		{TrainConfig{VocabSize: 263, Added: []string{"<x>"}}, "TrainConfig.VocabSize: must be ≥ 264"},
		{TrainConfig{MinFrequency: -1}, "TrainConfig.MinFrequency: must be ≥ 1 (got -1)"},
		{TrainConfig{Pattern: 9}, "TrainConfig.Pattern: unknown pattern 9"},
		{TrainConfig{Added: []string{"<x>", ""}}, `TrainConfig.Added[1]: "" must be non-empty UTF-8`},
		{TrainConfig{Added: []string{"<\xff>"}}, `TrainConfig.Added[0]: "<\xff>" must be non-empty UTF-8`},
		{TrainConfig{Added: []string{"<think>"}}, `TrainConfig.Added[0]: "<think>" is already an added token`},
		{TrainConfig{Added: []string{"Ġ"}}, `TrainConfig.Added[0]: "Ġ" is the token of a byte`},
	} {
		_, err := Train([]string{"hello"}, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Train(%+v) error = %v, want it to contain %q", c.cfg, err, c.want)
		}
	}
}
