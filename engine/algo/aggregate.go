package algo

import "fmt"

// AggWeights returns the per-token weights w of a loss aggregation mode
// (Config.LossAgg, veRL's agg_loss), so that the aggregated loss is
//
//	L = Σ_i Σ_t w_it · l_it      and      ∂L/∂x_it = w_it · ∂l_it/∂x_it.
//
// With m the loss mask, n_i = Σ_t m_it the agent tokens of sequence i, N =
// Σ_i n_i and B the number of sequences with n_i > 0:
//
//	token-mean               w = m / N                  (DAPO; veRL default; long answers weigh more)
//	seq-mean-token-sum       w = m / B                  (veRL seq-mean-token-sum)
//	seq-mean-token-mean      w = m / (B · n_i)          (original GRPO, the RAGEN paper's Eq. 5)
//	seq-mean-token-sum-norm  w = m / (B · L)            (Dr. GRPO; L = scaleLen, or the longest sequence if 0)
//
// Sequences without agent tokens count in none of the means (as veRL's
// seq_mask). seq-mean-token-sum-norm divides by B·L like TRL and SkyRL
// (veRL divides by L alone and leaves B to its gradient accumulation).
//
// The normalisers (N, B, L) are those of the sequences passed in: call it
// once per optimizer step on that step's whole minibatch and slice the
// weights for micro-batches. A minibatch is thus normalised by its own token
// count, as veRL does, whatever the micro-batching, and every optimizer step
// gets a loss of the same scale.
func AggWeights(mode string, mask [][]bool, scaleLen int) ([][]float64, error) {
	N, B, longest := 0, 0, 0
	count := make([]int, len(mask))
	for i, m := range mask {
		for _, v := range m {
			if v {
				count[i]++
			}
		}
		N += count[i]
		if count[i] > 0 {
			B++
		}
		longest = max(longest, len(m))
	}
	if N == 0 {
		return nil, fmt.Errorf("loss_agg: the batch has no agent tokens")
	}
	w := zeros(mask)
	for i, m := range mask {
		if count[i] == 0 {
			continue
		}
		var wi float64
		switch mode {
		case AggTokenMean:
			wi = 1 / float64(N)
		case AggSeqMeanTokenSum:
			wi = 1 / float64(B)
		case AggSeqMeanTokenMean:
			wi = 1 / (float64(B) * float64(count[i]))
		case AggSeqMeanTokenSumNrm:
			L := scaleLen
			if L == 0 {
				L = longest
			}
			wi = 1 / (float64(B) * float64(L))
		default:
			return nil, fmt.Errorf("loss_agg: unknown mode %q", mode)
		}
		for t, v := range m {
			if v {
				w[i][t] = wi
			}
		}
	}
	return w, nil
}

// Aggregate is Σ_i Σ_t w_it · x_it, summed in batch then token order.
func Aggregate(x, w [][]float64) float64 {
	s := 0.0
	for i := range w {
		for t, wt := range w[i] {
			if wt != 0 {
				s += wt * x[i][t]
			}
		}
	}
	return s
}
