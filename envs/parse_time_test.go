package envs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ragen-go/ragen/envs"
)

// Parse must stay linear on hostile responses: a backtracking matcher, or a
// rescan from every <think>, is quadratic here and takes minutes on 1 MB.
func TestParseLinearTime(t *testing.T) {
	const n = 1 << 20
	inputs := map[string]func(int) string{
		"open think":      func(n int) string { return strings.Repeat("<think>", n/7) },
		"close think":     func(n int) string { return "<think>" + strings.Repeat("</think> ", n/9) },
		"close no answer": func(n int) string { return "<think>" + strings.Repeat("</think>\n<answer>", n/17) },
		"answers":         func(n int) string { return strings.Repeat("<answer>", n/8) },
		"separators":      func(n int) string { return "<think>a</think><answer>" + strings.Repeat("Left||", n/6) + "</answer>" },
		"special tokens": func(n int) string {
			return "<think>" + strings.Repeat("<|im_end|<think", n/15) + "</think><answer>x</answer>"
		},
		"lookalike prefix": func(n int) string { return strings.Repeat("<thin", n/5) },
	}
	acts := []string{"Left", "Right"}
	measure := func(s string) time.Duration {
		best := time.Duration(1 << 62)
		for i := 0; i < 3; i++ {
			start := time.Now()
			envs.Parse(s, true, acts, 5)
			envs.Parse(s, false, acts, 5)
			best = min(best, time.Since(start))
		}
		return best
	}
	for name, mk := range inputs {
		small, large := measure(mk(n/4)), measure(mk(n))
		// Linear: 4× the input takes about 4× the time (a quadratic parser
		// 16×). Timings on a shared machine are noisy (GC of the 1 MB
		// copies), so only slow runs are judged by the ratio; linear runs
		// take a few ms, quadratic ones minutes.
		if large > 500*time.Millisecond || (large > 100*time.Millisecond && large > 12*small) {
			t.Errorf("%s: 256 KB in %v, 1 MB in %v: not linear", name, small, large)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	resp := "<think>The goal is two rows down and one column to the right; the way is clear.</think><answer>Down || Down || Right</answer>"
	acts := []string{"Left", "Down", "Right", "Up"}
	b.SetBytes(int64(len(resp)))
	for i := 0; i < b.N; i++ {
		envs.Parse(resp, true, acts, 5)
	}
}
