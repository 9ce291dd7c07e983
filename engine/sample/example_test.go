package sample_test

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/sample"
)

// One sequence's generation loop: its own RNG, a reusable Sampler, and a
// Stopper for the token ids of "</answer>".
func Example() {
	logits := []float32{0.1, 2.0, 1.5, -1.0, 0.3} // from the model, one row per step
	opts := sample.Options{Temperature: 0.7, TopK: 3, TopP: 0.9}
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	rng := sample.NewRNG(42) // one stream per sequence
	var s sample.Sampler
	stop := sample.NewStopper([][]int{{2, 2}})
	var tokens []int
	for len(tokens) < 10 {
		tokens = append(tokens, s.Sample(logits, opts, rng))
		if stop.Match(tokens) {
			break
		}
	}
	fmt.Println(tokens, s.Sample(logits, sample.Options{}, nil))
	// Output: [1 1 2 2] 1
}
