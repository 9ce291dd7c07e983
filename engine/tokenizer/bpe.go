package tokenizer

import (
	"strings"
	"sync"
)

// merge is one ranked merge rule: the pair of tokens it joins and the token
// it makes. Lower rank merges first.
type merge struct {
	rank int32
	id   int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// symbol is one token of a word while merges are applied; symbols form a
// doubly linked list over their starting byte positions.
type symbol struct {
	id         int32 // token id, or -1 once merged into its left neighbour
	prev, next int32 // neighbours' positions, -1 at the ends
}

// candidate is a possible merge of the symbol at pos with its right neighbour.
type candidate struct {
	rank, pos, id int32
}

// candidateHeap is a min-heap by (rank, pos): the lowest-ranked merge, and
// among equal ranks the leftmost, comes out first, as in Hugging Face's
// Word::merge_all.
type candidateHeap []candidate

func (h candidateHeap) less(i, j int) bool {
	return h[i].rank < h[j].rank || (h[i].rank == h[j].rank && h[i].pos < h[j].pos)
}

func (h *candidateHeap) push(c candidate) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *candidateHeap) pop() candidate {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && s.less(l, m) {
			m = l
		}
		if l+1 < n && s.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// bpe returns the tokens of one pre-token word (raw bytes, len(w) > 0):
// start from one token per byte, then repeatedly apply the lowest-ranked
// merge among adjacent pairs (leftmost first on ties) until none applies.
// A heap of candidate merges makes this O(n log n) in the word's length;
// candidates made stale by an earlier merge are skipped when popped.
func (t *Tokenizer) bpe(w string) []int {
	syms := make([]symbol, len(w))
	var h candidateHeap
	for i := range syms {
		syms[i] = symbol{id: t.byteID[w[i]], prev: int32(i - 1), next: int32(i + 1)}
		if i > 0 {
			if m, ok := t.merges[pairKey(syms[i-1].id, syms[i].id)]; ok {
				h.push(candidate{m.rank, int32(i - 1), m.id})
			}
		}
	}
	syms[len(syms)-1].next = -1
	for len(h) > 0 {
		c := h.pop()
		s := &syms[c.pos]
		if s.id < 0 || s.next < 0 {
			continue
		}
		r := &syms[s.next]
		if m, ok := t.merges[pairKey(s.id, r.id)]; !ok || m.id != c.id {
			continue // stale: one side has changed since c was pushed
		}
		s.id = c.id
		r.id = -1
		s.next = r.next
		if s.next >= 0 {
			syms[s.next].prev = c.pos
		}
		if s.prev >= 0 {
			if m, ok := t.merges[pairKey(syms[s.prev].id, s.id)]; ok {
				h.push(candidate{m.rank, s.prev, m.id})
			}
		}
		if s.next >= 0 {
			if m, ok := t.merges[pairKey(s.id, syms[s.next].id)]; ok {
				h.push(candidate{m.rank, c.pos, m.id})
			}
		}
	}
	var out []int
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, int(syms[i].id))
	}
	return out
}

// Words longer than cacheMaxWordLen bytes are not cached (they rarely
// repeat); the cache is emptied when it holds cacheMaxWords words, which
// bounds its memory whatever text goes through it.
const (
	cacheMaxWordLen = 256
	cacheMaxWords   = 1 << 16
)

// wordCache maps a word's raw bytes to its tokens. It is safe for concurrent
// use: rollout workers encode in parallel.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int
}

func (c *wordCache) get(w string) ([]int, bool) {
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheMaxWords {
		c.m = make(map[string][]int)
	}
	c.m[strings.Clone(w)] = ids // clone: w points into the caller's text
	c.mu.Unlock()
}

// appendWord appends the tokens of the word w (raw bytes) to ids.
func (t *Tokenizer) appendWord(ids []int, w string) []int {
	if len(w) == 1 {
		return append(ids, int(t.byteID[w[0]]))
	}
	if len(w) > cacheMaxWordLen {
		return append(ids, t.wordTokens(w)...)
	}
	if cached, ok := t.cache.get(w); ok {
		return append(ids, cached...)
	}
	toks := t.wordTokens(w)
	t.cache.put(w, toks)
	return append(ids, toks...)
}

// wordTokens applies the model to one word: with ignore_merges (Llama 3) a
// word that is itself in the vocabulary is one token; otherwise BPE.
func (t *Tokenizer) wordTokens(w string) []int {
	if t.ignoreMerges {
		if id, ok := t.vocab[toByteLevel(w)]; ok {
			return []int{id}
		}
	}
	return t.bpe(w)
}
