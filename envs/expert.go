package envs

import (
	"fmt"
	"math/rand"
)

// Expert is implemented by environments that can demonstrate how to play:
// the warm start fine-tunes the policy on these demonstrations.
type Expert interface {
	// Demonstrate returns a response for the current state in the response
	// format, "<think>short reasoning</think><answer>A || B</answer>", with
	// reasoning that is correct for the actions and phrased in one of several
	// ways chosen with rng. With imperfect true it instead returns plausible
	// but suboptimal or random actions with reasoning that fits them.
	// It does not change the environment's state.
	Demonstrate(rng *rand.Rand, imperfect bool) string
}

// NumberWord spells n for an expert's reasoning: in words up to ten, in
// digits beyond.
func NumberWord(n int) string {
	if n >= 0 && n < len(numberWords) {
		return numberWords[n]
	}
	return fmt.Sprint(n)
}

var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
