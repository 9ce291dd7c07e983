package sample

import "strings"

// Stopper recognises the end of a generation: a token sequence such as the
// ids of "</answer>", or a stop string such as "</answer>" however the
// tokens spell it. Stop sequences may overlap and share prefixes or
// suffixes; Match only ever looks at the end of the tokens generated so far.
type Stopper struct {
	byLast map[int][][]int // stop sequences indexed by their last token

	strs    []string            // stop strings (NewStringStopper)
	text    func(id int) string // a token's bytes
	longest int                 // the longest stop string's length
}

// NewStopper copies stops; empty sequences are ignored. A nil or empty list
// gives a Stopper that never matches.
func NewStopper(stops [][]int) *Stopper {
	s := &Stopper{byLast: make(map[int][][]int)}
	for _, seq := range stops {
		if len(seq) == 0 {
			continue
		}
		last := seq[len(seq)-1]
		s.byLast[last] = append(s.byLast[last], append([]int(nil), seq...))
	}
	return s
}

// NewStringStopper returns a Stopper on the text of the tokens, text(id)
// being the bytes token id stands for: it matches when one of stops
// occurs in that text and the occurrence ends inside the last token's
// text (vLLM's rule for stop strings). A byte-level BPE spells a string in
// many ways — "</answer>" as "</" "answer" ">", or with the last token
// ">\n" running past it — and each ends the generation at the token that
// completes the string. Empty stop strings are ignored.
func NewStringStopper(text func(id int) string, stops []string) *Stopper {
	s := &Stopper{text: text}
	for _, str := range stops {
		if str != "" {
			s.strs = append(s.strs, str)
			s.longest = max(s.longest, len(str))
		}
	}
	return s
}

// Match reports whether tokens ends with one of the stop sequences, or
// completes a stop string with its last token. Called after each new token,
// it costs one map lookup plus a suffix compare per stop sequence ending in
// that token, or the decoding of the few last tokens that can hold a stop
// string.
func (s *Stopper) Match(tokens []int) bool {
	if s == nil || len(tokens) == 0 {
		return false
	}
	if len(s.strs) > 0 {
		return s.matchString(tokens)
	}
	for _, seq := range s.byLast[tokens[len(tokens)-1]] {
		if len(seq) > len(tokens) {
			continue
		}
		tail := tokens[len(tokens)-len(seq):]
		match := true
		for i, t := range seq {
			if tail[i] != t {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// matchString decodes the tail that can hold a stop string completed by
// the last token: the last token's text and up to longest−1 bytes before
// it. An occurrence in that window ends inside the last token.
func (s *Stopper) matchString(tokens []int) bool {
	last := s.text(tokens[len(tokens)-1])
	tail := last
	for i := len(tokens) - 2; i >= 0 && len(tail) < len(last)+s.longest-1; i-- {
		tail = s.text(tokens[i]) + tail
	}
	before := len(tail) - len(last) // bytes of tail before the last token
	for _, str := range s.strs {
		if strings.Contains(tail[max(0, before-len(str)+1):], str) {
			return true
		}
	}
	return false
}
