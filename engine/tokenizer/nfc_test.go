package tokenizer

import (
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// TestNFCLongRuns: NFC of long runs of combining marks is Unicode's, as
// the reference tokenizers normalise, without the U+034F that x/text's
// stream-safe format inserts after 30 marks. The expected forms follow
// from the definition: the marks in canonical order (by combining class,
// stably), and a mark composes with the base letter when no mark of its
// class or higher stands between them.
func TestNFCLongRuns(t *testing.T) {
	const (
		graveBelow   = "\u0316" // class 220, composes with no letter here
		xSymbolAbove = "\u0353" // class 220
		leftHalfRing = "\u0351" // class 230, composes with nothing
		acute        = "\u0301" // class 230, a + acute = á
		tildeOverlay = "\u0334" // class 1
	)
	for _, c := range []struct{ name, in, want string }{
		{"40 marks in canonical order", "q" + strings.Repeat(graveBelow, 20) + strings.Repeat(leftHalfRing, 20),
			"q" + strings.Repeat(graveBelow, 20) + strings.Repeat(leftHalfRing, 20)},
		{"40 marks reordered across the 30th", "q" + strings.Repeat(leftHalfRing+graveBelow, 20),
			"q" + strings.Repeat(graveBelow, 20) + strings.Repeat(leftHalfRing, 20)},
		{"three classes, stable within each", "q" + strings.Repeat(leftHalfRing+xSymbolAbove+tildeOverlay+graveBelow, 12) + " end",
			"q" + strings.Repeat(tildeOverlay, 12) + strings.Repeat(xSymbolAbove+graveBelow, 12) + strings.Repeat(leftHalfRing, 12) + " end"},
		{"a composition after 40 marks", "a" + strings.Repeat(graveBelow, 40) + acute,
			"\u00e1" + strings.Repeat(graveBelow, 40)},
		{"a decomposed letter's mark after them", "\u00e1" + strings.Repeat(graveBelow, 35) + " x",
			"\u00e1" + strings.Repeat(graveBelow, 35) + " x"},
		{"blocked by a mark of its class", "a" + strings.Repeat(leftHalfRing, 31) + acute,
			"a" + strings.Repeat(leftHalfRing, 31) + acute},
		{"an invalid byte passes through", "q" + strings.Repeat(leftHalfRing+graveBelow, 16) + "\xff" + "e" + acute,
			"q" + strings.Repeat(graveBelow, 16) + strings.Repeat(leftHalfRing, 16) + "\xff" + "\u00e9"},
	} {
		if got := nfc(c.in); got != c.want {
			t.Errorf("%s: nfc =\n%+q\nwant\n%+q", c.name, got, c.want)
		}
		if strings.Contains(c.want, "\xff") {
			continue
		}
		// The tokenizer normalises so: its tokens spell the NFC form.
		tok := mustTokenizer(t, spec{vocab: byteVocab(), nfc: true, pattern: PatternQwen2})
		if got, err := tok.Decode(tok.Encode(c.in)); err != nil || got != c.want {
			t.Errorf("%s: Decode(Encode) =\n%+q, %v\nwant\n%+q", c.name, got, err, c.want)
		}
	}
}

// TestNFCAgreesWithXText: on text without long runs of marks nfc and the
// book algorithm it falls back to give x/text's NFC: composed and
// decomposed Latin, Vietnamese's stacked marks, Hangul syllables and jamo,
// Devanagari's nukta, composition exclusions and singletons.
func TestNFCAgreesWithXText(t *testing.T) {
	for _, s := range []string{
		"", "plain ASCII", "café cafe\u0301", "Tiếng Việt: Tie\u0302\u0301ng Vie\u0323\u0302t",
		"a\u0301\u0316 a\u0316\u0301 \u1e9b\u0323 q\u0307\u0323 \u00c5\u212b\u0041\u030a",
		"한국어 \u1112\u1161\u11ab\u1100\u116e\u11a8 \u1100\u1161\u11a8\u11a8", "क़ \u0915\u093c \u0958",
		"\u0344 \u0340\u0341 \u2126 \u0f73 \u0b47\u0b3e \u0cc6\u0cc2\u0cd5", "\u0301 leading mark", "x\u0334\u0301\u0316\u0308y",
		// 30 marks after the last e, its acute included: the longest run
		// x/text leaves alone.
		strings.Repeat("e\u0301\u0316", 20) + strings.Repeat("\u0316", 27) + "\u0301",
	} {
		want := norm.NFC.String(s)
		if got := nfc(s); got != want {
			t.Errorf("nfc(%+q) = %+q, x/text %+q", s, got, want)
		}
		if got := nfcUnbounded(s); got != want {
			t.Errorf("nfcUnbounded(%+q) = %+q, x/text %+q", s, got, want)
		}
	}
}
