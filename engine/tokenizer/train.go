package tokenizer

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// TrainConfig configures Train. The zero value trains the default vocabulary.
type TrainConfig struct {
	// VocabSize is the vocabulary size to reach, added and byte tokens
	// included (default 512). Training stops early when no pair of tokens
	// occurs MinFrequency times.
	VocabSize int
	// MinFrequency is the least number of occurrences of a pair worth a
	// merge (default 2).
	MinFrequency int
	// Pattern is the pre-tokenizer split (default PatternQwen2: digits one
	// by one, so numbers stay compositional).
	Pattern Pattern
	// Added lists added tokens beyond the fixed seven (default none); they
	// get ids 7, 8, ... in this order and are special.
	Added []string
}

func (c TrainConfig) withDefaults() (TrainConfig, error) {
	if c.VocabSize == 0 {
		c.VocabSize = 512
	}
	if c.MinFrequency == 0 {
		c.MinFrequency = 2
	}
	if c.Pattern == 0 {
		c.Pattern = PatternQwen2
	}
	seen := map[string]bool{}
	for _, a := range fixedAdded {
		seen[a.Content] = true
	}
	for i, a := range c.Added {
		if a == "" || !utf8.ValidString(a) {
			return c, fmt.Errorf("TrainConfig.Added[%d]: %q must be non-empty UTF-8 (tokenizer.json holds text)", i, a)
		}
		if seen[a] {
			return c, fmt.Errorf("TrainConfig.Added[%d]: %q is already an added token", i, a)
		}
		if _, isByte := fromByteLevel(a); isByte && utf8.RuneCountInString(a) == 1 {
			return c, fmt.Errorf("TrainConfig.Added[%d]: %q is the token of a byte", i, a)
		}
		seen[a] = true
	}
	if least := len(fixedAdded) + len(c.Added) + 256; c.VocabSize < least {
		return c, fmt.Errorf("TrainConfig.VocabSize: must be ≥ %d (%d added tokens + 256 bytes) (got %d)", least, len(fixedAdded)+len(c.Added), c.VocabSize)
	}
	if c.MinFrequency < 1 {
		return c, fmt.Errorf("TrainConfig.MinFrequency: must be ≥ 1 (got %d)", c.MinFrequency)
	}
	if !c.Pattern.valid() {
		return c, fmt.Errorf("TrainConfig.Pattern: unknown pattern %d", int(c.Pattern))
	}
	return c, nil
}

// pairCount is a heap entry: a pair of tokens and its count when pushed.
type pairCount struct {
	count int
	key   uint64
}

// Train learns a byte-level BPE vocabulary from corpus (standard BPE
// training, as Hugging Face's BpeTrainer): the texts are split at added
// tokens and cut into pre-tokens; starting from the 256 byte tokens, the
// most frequent adjacent pair over all pre-tokens (weighted by their
// counts) is merged into a new token, again and again, until the
// vocabulary has cfg.VocabSize tokens. Ties go to the pair whose tokens'
// bytes sort first, so the result depends on the corpus only. A merge whose
// result equals an added token is never made, so plain text cannot encode
// to one.
func Train(corpus []string, cfg TrainConfig) (*Tokenizer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("tokenizer: train: %w", err)
	}
	added := append([]AddedToken(nil), fixedAdded...)
	for _, a := range cfg.Added {
		added = append(added, AddedToken{ID: len(added), Content: a, Special: true})
	}
	// raw[id] is each token's bytes; vocab holds the byte-level forms.
	vocab := make(map[string]int, cfg.VocabSize)
	var raw []string
	isAdded := map[string]bool{}
	for _, a := range added {
		vocab[a.Content] = a.ID
		raw = append(raw, a.Content)
		isAdded[a.Content] = true
	}
	var byteID [256]int32
	for _, b := range byteOrder {
		byteID[b] = int32(len(raw))
		vocab[string(byteRune[b])] = len(raw)
		raw = append(raw, string([]byte{b}))
	}
	skeleton, err := newTokenizer(spec{pattern: cfg.Pattern, vocab: vocab, added: added})
	if err != nil {
		return nil, fmt.Errorf("tokenizer: train: %w", err)
	}
	wordCount := skeleton.countWords(corpus)
	texts := make([]string, 0, len(wordCount))
	for w := range wordCount {
		texts = append(texts, w)
	}
	sort.Strings(texts)
	words := make([][]int32, len(texts))
	freq := make([]int, len(texts))
	counts := map[uint64]int{}    // pair → occurrences over all words
	where := map[uint64][]int32{} // pair → words that may hold it
	for i, w := range texts {
		freq[i] = wordCount[w]
		words[i] = make([]int32, len(w))
		for j := 0; j < len(w); j++ {
			words[i][j] = byteID[w[j]]
			if j > 0 {
				k := pairKey(words[i][j-1], words[i][j])
				counts[k] += freq[i]
				where[k] = append(where[k], int32(i))
			}
		}
	}
	// A max-heap of pairs by count, ties by the pair's bytes; entries whose
	// count has changed since they were pushed are skipped when popped.
	var h []pairCount
	less := func(x, y pairCount) bool { // x comes out before y
		if x.count != y.count {
			return x.count > y.count
		}
		xa, xb, ya, yb := raw[x.key>>32], raw[uint32(x.key)], raw[y.key>>32], raw[uint32(y.key)]
		if xa != ya {
			return xa < ya
		}
		return xb < yb
	}
	push := func(p pairCount) {
		h = append(h, p)
		for i := len(h) - 1; i > 0; {
			parent := (i - 1) / 2
			if !less(h[i], h[parent]) {
				break
			}
			h[i], h[parent] = h[parent], h[i]
			i = parent
		}
	}
	pop := func() pairCount {
		top, n := h[0], len(h)-1
		h[0] = h[n]
		h = h[:n]
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < n && less(h[l], h[m]) {
				m = l
			}
			if l+1 < n && less(h[l+1], h[m]) {
				m = l + 1
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
		return top
	}
	for k, c := range counts {
		push(pairCount{c, k})
	}
	var merges [][2]string
	seen := make([]int, len(words)) // merge step that last rewrote each word
	for step := 1; len(vocab) < cfg.VocabSize && len(h) > 0; {
		best := pop()
		if counts[best.key] != best.count {
			continue // stale
		}
		if best.count < cfg.MinFrequency {
			break
		}
		a, b := int32(best.key>>32), int32(uint32(best.key))
		text := raw[a] + raw[b]
		if isAdded[text] {
			delete(counts, best.key)
			continue
		}
		tok := toByteLevel(text)
		id, ok := vocab[tok]
		if !ok {
			id = len(raw)
			vocab[tok] = id
			raw = append(raw, text)
		}
		merges = append(merges, [2]string{toByteLevel(raw[a]), toByteLevel(raw[b])})
		touched := map[uint64]bool{}
		for _, wi := range where[best.key] {
			if seen[wi] == step {
				continue
			}
			seen[wi] = step
			old := words[wi]
			neu := make([]int32, 0, len(old))
			for j := 0; j < len(old); j++ {
				if j+1 < len(old) && old[j] == a && old[j+1] == b {
					neu = append(neu, int32(id))
					j++
				} else {
					neu = append(neu, old[j])
				}
			}
			if len(neu) == len(old) {
				continue // the pair left this word in an earlier merge
			}
			f := freq[wi]
			for j := 1; j < len(old); j++ {
				k := pairKey(old[j-1], old[j])
				counts[k] -= f
				touched[k] = true
			}
			for j := 1; j < len(neu); j++ {
				k := pairKey(neu[j-1], neu[j])
				counts[k] += f
				touched[k] = true
				if neu[j-1] == int32(id) || neu[j] == int32(id) {
					where[k] = append(where[k], wi)
				}
			}
			words[wi] = neu
		}
		delete(where, best.key)
		for k := range touched {
			if c := counts[k]; c > 0 {
				push(pairCount{c, k})
			} else {
				delete(counts, k)
			}
		}
		step++
	}
	t, err := newTokenizer(spec{pattern: cfg.Pattern, vocab: vocab, merges: merges, added: added})
	if err != nil {
		return nil, fmt.Errorf("tokenizer: train: %w", err)
	}
	return t, nil
}

// countWords counts the pre-tokens of the texts, skipping added tokens.
func (t *Tokenizer) countWords(texts []string) map[string]int {
	counts := map[string]int{}
	for _, s := range texts {
		for len(s) > 0 {
			seg := s
			if pos, a := t.findAdded(s); pos >= 0 {
				seg = s[:pos]
				s = s[pos+len(t.added[a].Content):]
			} else {
				s = ""
			}
			for len(seg) > 0 {
				n := t.pattern.next(seg)
				counts[seg[:n]]++
				seg = seg[n:]
			}
		}
	}
	return counts
}
