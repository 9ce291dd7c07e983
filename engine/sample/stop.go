package sample

// Stopper recognises the end of a generation: a token sequence such as the
// ids of "</answer>". Stop sequences may overlap and share prefixes or
// suffixes; Match only ever looks at the end of the tokens generated so far.
type Stopper struct {
	byLast map[int][][]int // stop sequences indexed by their last token
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

// Match reports whether tokens ends with one of the stop sequences. Called
// after each new token, it costs one map lookup plus a suffix compare per
// stop sequence ending in that token.
func (s *Stopper) Match(tokens []int) bool {
	if s == nil || len(tokens) == 0 {
		return false
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
