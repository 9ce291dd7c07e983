package tokenizer

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzRoundTrip checks, for any bytes: Decode(Encode(s)) == s, with and
// without added-token matching; every id in range; each pattern's pieces
// non-empty and rebuilding s; the heap BPE equal to its naive twin.
// Seeds: testdata/fuzz/FuzzRoundTrip. Run: go test ./engine/tokenizer -fuzz FuzzRoundTrip
func FuzzRoundTrip(f *testing.F) {
	tok := envTokenizer(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, ids := range [][]int{tok.Encode(s), tok.EncodeOrdinary(s)} {
			for _, id := range ids {
				if id < 0 || id >= tok.VocabSize() {
					t.Fatalf("Encode(%q) = %v: id %d out of range", s, ids, id)
				}
			}
			got, err := tok.Decode(ids)
			if err != nil {
				t.Fatal(err)
			}
			if got != s {
				t.Fatalf("Decode(Encode(%q)) = %q", s, got)
			}
		}
		for p := range regex {
			pieces := p.Split(s)
			for _, piece := range pieces {
				if piece == "" {
					t.Fatalf("%v.Split(%q) = %q has an empty piece", p, s, pieces)
				}
			}
			if strings.Join(pieces, "") != s {
				t.Fatalf("%v.Split(%q) = %q does not rebuild the input", p, s, pieces)
			}
		}
		if len(s) > 0 && len(s) <= 256 {
			if got, want := tok.bpe(s), tok.bpeNaive(s); !reflect.DeepEqual(got, want) {
				t.Fatalf("bpe(%q) = %v, naive %v", s, got, want)
			}
		}
	})
}
