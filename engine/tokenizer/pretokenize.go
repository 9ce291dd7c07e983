package tokenizer

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Pattern names a pre-tokenizer split regex. Each is implemented by a
// hand-written scanner with the regex's semantics (leftmost-first
// alternation, greedy quantifiers with backtracking, \s = Unicode
// White_Space, \p{L} letters, \p{N} numbers); bytes that are not valid UTF-8
// count as one-byte runes of none of those classes.
type Pattern int

const (
	// PatternGPT2 is GPT-2's split, also Hugging Face's ByteLevel(use_regex=true):
	//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
	PatternGPT2 Pattern = iota + 1
	// PatternQwen2 is Qwen2's (and Qwen2.5's, Qwen3's) split: case-insensitive
	// contractions, one word may start with one non-letter, digits one by
	// one, newlines kept with the punctuation or whitespace before them.
	PatternQwen2
	// PatternLlama3 is PatternQwen2 with runs of up to three digits (\p{N}{1,3}).
	PatternLlama3
)

// regex is each pattern's regex as Hugging Face tokenizer.json files spell it.
var regex = map[Pattern]string{
	PatternGPT2:   `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
	PatternQwen2:  `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	PatternLlama3: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

var patternNames = map[Pattern]string{PatternGPT2: "gpt2", PatternQwen2: "qwen2", PatternLlama3: "llama3"}

// String returns the pattern's short name: gpt2, qwen2 or llama3.
func (p Pattern) String() string {
	if n, ok := patternNames[p]; ok {
		return n
	}
	return fmt.Sprintf("Pattern(%d)", int(p))
}

// Regex returns the pattern's regex as written in tokenizer.json.
func (p Pattern) Regex() string { return regex[p] }

func (p Pattern) valid() bool { _, ok := regex[p]; return ok }

// patternOfRegex finds the pattern whose regex is exactly re.
func patternOfRegex(re string) (Pattern, bool) {
	for p, r := range regex {
		if r == re {
			return p, true
		}
	}
	return 0, false
}

// Split cuts s into pre-tokens. Concatenated, they give s back.
func (p Pattern) Split(s string) []string {
	var out []string
	for len(s) > 0 {
		n := p.next(s)
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// next returns the length in bytes of the first pre-token of s (len(s) > 0);
// it is always > 0.
func (p Pattern) next(s string) int {
	if p == PatternGPT2 {
		return nextGPT2(s)
	}
	maxDigits := 1
	if p == PatternLlama3 {
		maxDigits = 3
	}
	return nextQwen2(s, maxDigits)
}

// class is the character class a rune belongs to for the split regexes.
type class uint8

const (
	clsOther  class = iota // [^\s\p{L}\p{N}], and bytes that are not UTF-8
	clsLetter              // \p{L}
	clsNumber              // \p{N}
	clsSpace               // \s
)

var asciiClass [128]class

func init() {
	for c := 0; c < 128; c++ {
		asciiClass[c] = classOfRune(rune(c))
	}
}

func classOfRune(r rune) class {
	switch {
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.IsSpace(r): // the White_Space property, as \s in Oniguruma
		return clsSpace
	}
	return clsOther
}

// classAt returns the class and width of the rune starting at s[i] (i < len(s)).
func classAt(s string, i int) (class, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && w == 1 {
		return clsOther, 1
	}
	return classOfRune(r), w
}

// run returns the end of the run of runes of class c starting at i.
func run(s string, i int, c class) int {
	for i < len(s) {
		ci, w := classAt(s, i)
		if ci != c {
			break
		}
		i += w
	}
	return i
}

// spaceRun implements \s+(?!\S)|\s+ at the start of s, where s[0] is
// whitespace: the maximal run, less its last rune when a non-space follows
// and the run has more than one rune (that rune then starts the next word,
// as in " word").
func spaceRun(s string) int {
	i, last := 0, 0
	for i < len(s) {
		c, w := classAt(s, i)
		if c != clsSpace {
			break
		}
		last = i
		i += w
	}
	if i < len(s) && last > 0 {
		return last
	}
	return i
}

// contraction implements 's|'t|'re|'ve|'m|'ll|'d at the start of s
// (s[0] == '\”), case-insensitively if fold. It returns 0 for no match.
func contraction(s string, fold bool) int {
	lower := func(i int) byte {
		if i >= len(s) {
			return 0
		}
		c := s[i]
		if fold && c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		return c
	}
	switch lower(1) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if lower(2) == 'e' {
			return 3
		}
	case 'l':
		if lower(2) == 'l' {
			return 3
		}
	}
	// Unicode case folding maps ſ (U+017F, long s) to s.
	if fold && len(s) >= 3 && s[1] == 0xC5 && s[2] == 0xBF {
		return 3
	}
	return 0
}

// nextGPT2 scans the first match of PatternGPT2.
func nextGPT2(s string) int {
	if s[0] == '\'' {
		if n := contraction(s, false); n > 0 {
			return n
		}
	}
	// ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a
	// run of one class.
	if s[0] == ' ' && len(s) > 1 {
		if c, _ := classAt(s, 1); c != clsSpace {
			return run(s, 1, c)
		}
	}
	if c, _ := classAt(s, 0); c != clsSpace {
		return run(s, 0, c)
	}
	return spaceRun(s)
}

// nextQwen2 scans the first match of PatternQwen2 (maxDigits 1) or
// PatternLlama3 (maxDigits 3).
func nextQwen2(s string, maxDigits int) int {
	if s[0] == '\'' {
		if n := contraction(s, true); n > 0 {
			return n
		}
	}
	c0, w0 := classAt(s, 0)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0 == clsLetter {
		return run(s, 0, clsLetter)
	}
	if c0 != clsNumber && s[0] != '\r' && s[0] != '\n' && w0 < len(s) {
		if c1, _ := classAt(s, w0); c1 == clsLetter {
			return run(s, w0, clsLetter)
		}
	}
	// \p{N} or \p{N}{1,3}
	if c0 == clsNumber {
		i := 0
		for d := 0; d < maxDigits && i < len(s); d++ {
			c, w := classAt(s, i)
			if c != clsNumber {
				break
			}
			i += w
		}
		return i
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	start := -1
	if c0 == clsOther {
		start = 0
	} else if s[0] == ' ' && len(s) > 1 {
		if c1, _ := classAt(s, 1); c1 == clsOther {
			start = 1
		}
	}
	if start >= 0 {
		i := run(s, start, clsOther)
		for i < len(s) && (s[i] == '\r' || s[i] == '\n') {
			i++
		}
		return i
	}
	// Here s[0] is whitespace. `\s*[\r\n]+`: the whitespace run up to and
	// including its last \r or \n.
	end, nl := 0, -1
	for end < len(s) {
		c, w := classAt(s, end)
		if c != clsSpace {
			break
		}
		if s[end] == '\r' || s[end] == '\n' {
			nl = end
		}
		end += w
	}
	if nl >= 0 {
		return nl + 1
	}
	return spaceRun(s)
}
