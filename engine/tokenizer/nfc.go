package tokenizer

import (
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// cgj is U+034F COMBINING GRAPHEME JOINER, which golang.org/x/text's norm
// inserts after 30 non-starters in a row (the stream-safe text format,
// UAX #15 §13).
const cgj = "\u034f"

// nfc is Unicode NFC as the reference tokenizers apply it (Hugging Face
// tokenizers' unicode-normalization, JavaScript's String.normalize):
// without the stream-safe text format. norm.NFC gives the same text unless
// a run of more than 30 non-starters makes it insert a U+034F, which
// changes the tokens, and, since U+034F is a starter, stops the canonical
// reordering and blocks the compositions across it; such text is
// normalised by nfcUnbounded instead.
func nfc(s string) string {
	if norm.NFC.IsNormalString(s) {
		return s
	}
	out := norm.NFC.String(s)
	if strings.Count(out, cgj) == strings.Count(s, cgj) {
		return out
	}
	return nfcUnbounded(s)
}

// nfcUnbounded is NFC by the book (UAX #15): the canonical decomposition of
// every rune, the canonical ordering of every run of non-starters however
// long, then the canonical composition. Each step asks x/text about one
// rune or one pair only, where the stream-safe limit never applies: the
// decomposition of a rune, its canonical combining class, and whether a
// starter and the next character compose (their NFC is one rune). Bytes
// that are not UTF-8 pass through and separate the text around them, as
// the reference never sees them.
func nfcUnbounded(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		n := 0 // a prefix of valid UTF-8
		for n < len(s) {
			r, size := utf8.DecodeRuneInString(s[n:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			n += size
		}
		b.WriteString(composeRunes(orderRunes(decomposeRunes(s[:n]))))
		if n < len(s) {
			b.WriteByte(s[n]) // an invalid byte
			n++
		}
		s = s[n:]
	}
	return b.String()
}

// decomposeRunes is the full canonical decomposition of valid UTF-8 s.
func decomposeRunes(s string) []rune {
	rs := make([]rune, 0, len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			rs = append(rs, r)
			continue
		}
		for _, d := range norm.NFD.String(string(r)) {
			rs = append(rs, d)
		}
	}
	return rs
}

// ccc is the canonical combining class of r; 0 for a starter.
func ccc(r rune) uint8 {
	if r < 0x300 {
		return 0 // ASCII and Latin-1 letters: no combining marks below U+0300
	}
	return norm.NFD.PropertiesString(string(r)).CCC()
}

// orderRunes sorts every run of non-starters by combining class, stably:
// the canonical ordering.
func orderRunes(rs []rune) []rune {
	for i := 0; i < len(rs); {
		if ccc(rs[i]) == 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(rs) && ccc(rs[j]) != 0 {
			j++
		}
		slices.SortStableFunc(rs[i:j], func(a, b rune) int { return int(ccc(a)) - int(ccc(b)) })
		i = j
	}
	return rs
}

// composeRunes is the canonical composition of decomposed, ordered rs: each
// character joins the last starter when nothing between them blocks it (a
// starter, or a mark of its class or higher) and the two have a primary
// composite.
func composeRunes(rs []rune) string {
	out := rs[:0]
	starter := -1 // index in out of the last starter; -1 before the first
	var last uint8
	for _, r := range rs {
		c := ccc(r)
		adjacent := starter >= 0 && starter == len(out)-1
		if starter >= 0 && (adjacent || (last != 0 && last < c)) {
			if p, ok := composePair(out[starter], r); ok {
				out[starter] = p
				continue
			}
		}
		if c == 0 {
			starter = len(out)
		}
		last = c
		out = append(out, r)
	}
	return string(out)
}

// composePair is the primary composite of a starter and the character
// after it, if there is one.
func composePair(a, b rune) (rune, bool) {
	s := norm.NFC.String(string([]rune{a, b}))
	if r, n := utf8.DecodeRuneInString(s); n == len(s) && r != utf8.RuneError {
		return r, true
	}
	return 0, false
}
