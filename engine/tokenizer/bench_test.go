package tokenizer

import (
	"strings"
	"testing"
)

// BenchmarkEncode encodes rollout-like text (about 256 KiB of ChatML
// conversations with grids) with the trained 512-token vocabulary, as the
// trainer does every step; the word cache is warm after the first pass.
func BenchmarkEncode(b *testing.B) {
	tok := envTokenizer(b)
	text := strings.Join(envCorpus(400, 11), "\n")
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	n := 0
	for b.Loop() {
		n = len(tok.Encode(text))
	}
	b.ReportMetric(float64(len(text))/float64(n), "bytes/token")
}

// BenchmarkEncodeUncached measures BPE itself: every word misses the cache.
func BenchmarkEncodeUncached(b *testing.B) {
	tok := envTokenizer(b)
	text := strings.Join(envCorpus(400, 11), "\n")
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.cache = wordCache{}
		tok.Encode(text)
	}
}

func BenchmarkDecode(b *testing.B) {
	tok := envTokenizer(b)
	text := strings.Join(envCorpus(400, 11), "\n")
	ids := tok.Encode(text)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Decode(ids)
	}
}
