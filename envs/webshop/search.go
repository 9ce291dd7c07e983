package webshop

import (
	"math"
	"sort"
	"strings"
)

// BM25 parameters: the usual defaults.
const (
	bm25K1 = 1.5  // term-frequency saturation
	bm25B  = 0.75 // document-length normalisation
)

// maxResults is how many hits a search keeps (WebShop's retriever returns
// the top 50).
const maxResults = 50

// tokenize lower-cases s and splits it into runs of letters and digits:
// "Slim-Fit T-Shirt, $20" → [slim fit t shirt 20].
func tokenize(s string) []string {
	var toks []string
	start := -1
	s = strings.ToLower(s)
	for i := 0; i <= len(s); i++ {
		alnum := i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= '0' && s[i] <= '9')
		switch {
		case alnum && start < 0:
			start = i
		case !alnum && start >= 0:
			toks = append(toks, s[start:i])
			start = -1
		}
	}
	return toks
}

// index is an inverted index for BM25 ranking.
type index struct {
	postings map[string][]posting
	docLen   []int
	avgLen   float64
}

// posting is one document containing a term, with the term's count there.
type posting struct {
	doc, tf int
}

func newIndex(docs []string) *index {
	ix := &index{postings: map[string][]posting{}, docLen: make([]int, len(docs))}
	total := 0
	for d, text := range docs {
		toks := tokenize(text)
		ix.docLen[d] = len(toks)
		total += len(toks)
		counts := map[string]int{}
		var order []string
		for _, t := range toks {
			if counts[t] == 0 {
				order = append(order, t)
			}
			counts[t]++
		}
		for _, t := range order {
			ix.postings[t] = append(ix.postings[t], posting{doc: d, tf: counts[t]})
		}
	}
	if len(docs) > 0 {
		ix.avgLen = float64(total) / float64(len(docs))
	}
	return ix
}

// hit is one ranked document.
type hit struct {
	doc   int
	score float64
}

// search ranks the documents containing any query term by BM25:
//
//	score(d) = Σ_{t ∈ q} idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avg|d|))
//	idf(t)   = ln(1 + (N − df + 0.5)/(df + 0.5))
//
// over the distinct query terms; ties go to the earlier document. It keeps
// the best limit hits.
func (ix *index) search(query string, limit int) []hit {
	n := float64(len(ix.docLen))
	scores := make([]float64, len(ix.docLen))
	var touched []int // documents with a query term, in first-touch order
	seen := map[string]bool{}
	for _, t := range tokenize(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := ix.postings[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := bm25K1 * (1 - bm25B + bm25B*float64(ix.docLen[p.doc])/ix.avgLen)
			if scores[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			scores[p.doc] += idf * tf * (bm25K1 + 1) / (tf + norm)
		}
	}
	hits := make([]hit, len(touched))
	for i, d := range touched {
		hits[i] = hit{d, scores[d]}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].doc < hits[j].doc
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}
