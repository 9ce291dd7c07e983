package cpu

import (
	"math"

	"github.com/ragen-go/ragen/engine/parallel"
)

// LogSoftmaxForward reads N rows of V logits and writes, per row n, the
// log-sum-exp lse[n], the log-probability of targets[n] (0 where
// targets[n] < 0, meaning no target) and the entropy of the distribution:
//
//	log p_j = z_j − lse,   lse = m + log Σ_j exp(z_j − m),   m = max_j z_j
//	H = −Σ_j p_j log p_j
//
// Everything is float32 with the max subtracted first.
func LogSoftmaxForward(lse, logprob, entropy, logits []float32, targets []int, N, V int) {
	parallel.For(N, grain(2*V), func(_, lo, hi int) {
		for n := lo; n < hi; n++ {
			z := logits[n*V : n*V+V]
			m := z[0]
			for _, v := range z[1:] {
				m = max(m, v)
			}
			// s = Σ e_j, u = Σ e_j (z_j − m), with e_j = exp(z_j − m);
			// then H = log s − u/s.
			var s, u float32
			var e [expBlock]float32
			for b := 0; b < V; b += expBlock {
				c := min(expBlock, V-b)
				for j := 0; j < c; j++ {
					e[j] = z[b+j] - m
				}
				expInPlace(e[:c])
				for j := 0; j < c; j++ {
					s += e[j]
					u += e[j] * (z[b+j] - m)
				}
			}
			ls := float32(math.Log(float64(s)))
			lse[n] = m + ls
			entropy[n] = ls - u/s
			logprob[n] = 0
			if t := targets[n]; t >= 0 {
				logprob[n] = z[t] - lse[n]
			}
		}
	})
}

// LogSoftmaxBackward turns per-row coefficients dlogprob[n] = ∂L/∂logprob[n]
// and dentropy[n] = ∂L/∂H[n] into logit gradients. dlogits may alias logits
// (it is then overwritten in place, as llm.c does):
//
//	∂L/∂z_j = dlogprob · (δ_{j,target} − p_j) − dentropy · p_j · (log p_j + H)
//
// Rows where both coefficients are 0 get a zero gradient.
func LogSoftmaxBackward(dlogits, logits, lse, entropy []float32, targets []int, dlogprob, dentropy []float32, N, V int) {
	parallel.For(N, grain(2*V), func(_, lo, hi int) {
		for n := lo; n < hi; n++ {
			z, dz := logits[n*V:n*V+V], dlogits[n*V:n*V+V]
			a, b := dlogprob[n], dentropy[n]
			if targets[n] < 0 {
				a = 0
			}
			if a == 0 && b == 0 {
				clear(dz)
				continue
			}
			l, h := lse[n], entropy[n]
			var p [expBlock]float32
			for k := 0; k < V; k += expBlock {
				c := min(expBlock, V-k)
				for j := 0; j < c; j++ {
					p[j] = z[k+j] - l
				}
				expInPlace(p[:c])
				// z[k+j] is read before dz[k+j] is written: dz may alias z.
				for j := 0; j < c; j++ {
					lp := z[k+j] - l
					dz[k+j] = -a*p[j] - b*p[j]*(lp+h)
				}
			}
			if a != 0 {
				dz[targets[n]] += a
			}
		}
	})
}
