package model

import "errors"

// CrossEntropyGrad is the supervised next-token loss of a Forward's
// log-probabilities (aligned as Output.LogProb): the mean of −logProb[i]
// over the tokens i where mask[i] is true (nil mask: every token; the
// first token of a sequence never counts, having no prediction). It writes
// ∂loss/∂logProb into dlp (len(logProb) entries: −1/n on the n counted
// tokens, 0 elsewhere), ready for Backward. CrossEntropy uses it, and so
// does anything that runs the model elsewhere (a compute backend).
func CrossEntropyGrad(dlp, logProb []float32, lens []int, mask []bool) (float32, error) {
	// counted reports whether token i is in the loss: masked in, and not
	// the first of its sequence (LogProb is 0 there, see alignRows).
	first := make(map[int]bool, len(lens))
	o := 0
	for _, L := range lens {
		first[o] = true
		o += L
	}
	counted := func(i int) bool { return !first[i] && (mask == nil || mask[i]) }
	n := 0
	for i := range logProb {
		if counted(i) {
			n++
		}
	}
	if n == 0 {
		return 0, errors.New("cross-entropy: no token to predict (mask empty or all sequences of length 1)")
	}
	var loss float64
	for i := range logProb {
		dlp[i] = 0
		if counted(i) {
			loss -= float64(logProb[i])
			dlp[i] = -1 / float32(n)
		}
	}
	return float32(loss / float64(n)), nil
}
