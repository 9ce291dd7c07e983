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
// Everything is float32 with the max subtracted first. The sums over a
// row run in index order, a serial chain of float32 additions whose
// bits the engine's metrics and golden files hold; rows go four at a
// time (softmax4), their chains interleaved, so that the core adds four
// rows' terms in the time one chain's latency allows one: the same bits,
// 1.6× faster at Qwen2.5's 151,936 tokens (decision 54).
func LogSoftmaxForward(lse, logprob, entropy, logits []float32, targets []int, N, V int) {
	g := (grain(2*V) + 3) &^ 3 // whole groups of four rows per chunk
	parallel.For(N, g, func(_, lo, hi int) {
		n := lo
		for ; n+4 <= hi; n += 4 {
			var m [4]float32
			for r := range m {
				m[r] = rowMax(logits[(n+r)*V : (n+r+1)*V])
			}
			s, u := softmax4(logits[n*V:(n+4)*V], V, m)
			for r := range 4 {
				logSoftmaxRow(lse, logprob, entropy, logits, targets, n+r, V, m[r], s[r], u[r])
			}
		}
		for ; n < hi; n++ {
			z := logits[n*V : n*V+V]
			m := rowMax(z)
			s, u := softmax1(z, m)
			logSoftmaxRow(lse, logprob, entropy, logits, targets, n, V, m, s, u)
		}
	})
}

// logSoftmaxRow writes row n's lse, log-probability and entropy from its
// max m and its sums s = Σ e_j, u = Σ e_j (z_j − m), e_j = exp(z_j − m):
// lse = m + log s, H = log s − u/s.
func logSoftmaxRow(lse, logprob, entropy, logits []float32, targets []int, n, V int, m, s, u float32) {
	ls := float32(math.Log(float64(s)))
	lse[n] = m + ls
	entropy[n] = ls - u/s
	logprob[n] = 0
	if t := targets[n]; t >= 0 {
		logprob[n] = logits[n*V+t] - lse[n]
	}
}

// rowMax is max_j z[j] (len(z) ≥ 1): four running maxima over j mod 4,
// then their max. The max is exact and Go's max is commutative (NaN
// wins, +0 over −0), so the result is that of one pass in order.
func rowMax(z []float32) float32 {
	m0, m1, m2, m3 := z[0], z[0], z[0], z[0]
	j := 0
	for ; j+4 <= len(z); j += 4 {
		q := z[j : j+4 : j+4]
		m0, m1, m2, m3 = max(m0, q[0]), max(m1, q[1]), max(m2, q[2]), max(m3, q[3])
	}
	for ; j < len(z); j++ {
		m0 = max(m0, z[j])
	}
	return max(m0, m1, m2, m3)
}

// softmax1 returns one row's s = Σ_j e_j and u = Σ_j e_j (z_j − m), with
// e_j = exp(z_j − m), summed in index order.
func softmax1(z []float32, m float32) (s, u float32) {
	var e [expBlock]float32
	for b := 0; b < len(z); b += expBlock {
		c := min(expBlock, len(z)-b)
		for j := 0; j < c; j++ {
			e[j] = z[b+j] - m
		}
		expInPlace(e[:c])
		for j := 0; j < c; j++ {
			s += e[j]
			u += e[j] * (z[b+j] - m)
		}
	}
	return s, u
}

// softmax4 is softmax1 of four rows of V logits (z, [4·V]) with maxima
// m, their sums interleaved: eight independent chains, each row's terms
// in index order as softmax1 adds them.
func softmax4(z []float32, V int, m [4]float32) (s, u [4]float32) {
	var d, e [4][expBlock]float32
	var s0, s1, s2, s3, u0, u1, u2, u3 float32
	for b := 0; b < V; b += expBlock {
		c := min(expBlock, V-b)
		for r := range 4 {
			row := z[r*V+b : r*V+b+c]
			for j, v := range row {
				d[r][j] = v - m[r]
			}
			copy(e[r][:c], d[r][:c])
			expInPlace(e[r][:c])
		}
		d0, d1, d2, d3 := d[0][:c], d[1][:c], d[2][:c], d[3][:c]
		e0, e1, e2, e3 := e[0][:c], e[1][:c], e[2][:c], e[3][:c]
		for j := range d0 {
			s0 += e0[j]
			u0 += e0[j] * d0[j]
			s1 += e1[j]
			u1 += e1[j] * d1[j]
			s2 += e2[j]
			u2 += e2[j] * d2[j]
			s3 += e3[j]
			u3 += e3[j] * d3[j]
		}
	}
	return [4]float32{s0, s1, s2, s3}, [4]float32{u0, u1, u2, u3}
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
