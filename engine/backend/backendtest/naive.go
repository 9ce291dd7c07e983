package backendtest

import (
	"fmt"
	"math"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/sample"
)

// Naive is the oracle of the conformance suite: every op of the interface
// written the plainest way, each value computed in float64 from the
// float32 inputs and rounded once when stored. It is slow and has no
// tricks (no packing, no fusion, no parallelism), so a backend that
// agrees with it computes the ops' math, whatever its own kernels do.
type Naive struct{}

// nbuf is a Naive float32 buffer, nbf16 a bf16 one (exact bf16 values
// stored widened, as the CPU backend does).
type (
	nbuf  []float32
	nbf16 []float32
)

func (x nbuf) Len() int  { return len(x) }
func (x nbf16) Len() int { return len(x) }
func (nbf16) BF16()      {}

func fl(b backend.Buffer) []float32 {
	switch x := b.(type) {
	case nil:
		return nil
	case nbuf:
		return x
	case nbf16:
		return x
	}
	panic(fmt.Sprintf("naive: a %T is not a buffer of this backend", b))
}

func (Naive) Name() string { return "naive" }
func (Naive) Err() error   { return nil }
func (Naive) Close() error { return nil }

func (Naive) Alloc(n int) (backend.Buffer, error)     { return nbuf(make([]float32, n)), nil }
func (Naive) AllocBF16(n int) (backend.Buffer, error) { return nbf16(make([]float32, n)), nil }
func (Naive) Free(backend.Buffer)                     {}

func (Naive) Slice(b backend.Buffer, off, n int) backend.Buffer {
	if x, ok := b.(nbf16); ok {
		return x[off : off+n : off+n]
	}
	return nbuf(fl(b)[off : off+n : off+n])
}

func (Naive) Upload(dst backend.Buffer, src []float32) error {
	if len(src) > dst.Len() {
		return fmt.Errorf("naive: upload of %d floats into %d", len(src), dst.Len())
	}
	copy(fl(dst), src)
	return nil
}

func (Naive) Download(dst []float32, src backend.Buffer) error {
	if len(dst) > src.Len() {
		return fmt.Errorf("naive: download of %d floats from %d", len(dst), src.Len())
	}
	copy(dst, fl(src))
	return nil
}

func (Naive) Copy(dst, src backend.Buffer, n int) { copy(fl(dst)[:n], fl(src)[:n]) }
func (Naive) Zero(b backend.Buffer)               { clear(fl(b)) }

func (Naive) Gemm(transA, transB bool, M, N, K int, alpha float32, a backend.Buffer, lda int, b backend.Buffer, ldb int, beta float32, c backend.Buffer, ldc int) {
	A, B, C := fl(a), fl(b), fl(c)
	at := func(i, k int) float64 {
		if transA {
			return float64(A[k*lda+i])
		}
		return float64(A[i*lda+k])
	}
	bt := func(k, j int) float64 {
		if transB {
			return float64(B[j*ldb+k])
		}
		return float64(B[k*ldb+j])
	}
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var s float64
			for k := 0; k < K; k++ {
				s += at(i, k) * bt(k, j)
			}
			prev := 0.0
			if beta != 0 {
				prev = float64(beta) * float64(C[i*ldc+j])
			}
			C[i*ldc+j] = float32(float64(alpha)*s + prev)
		}
	}
}

func (n Naive) GemmBF16(transA, transB bool, M, N, K int, alpha float32, a backend.Buffer, lda int, b backend.Buffer, ldb int, beta float32, c backend.Buffer, ldc int) {
	n.Gemm(transA, transB, M, N, K, alpha, nbuf(a.(nbf16)), lda, nbuf(b.(nbf16)), ldb, beta, c, ldc)
}

func (n Naive) GemmBF16B(transA, transB bool, M, N, K int, alpha float32, a backend.Buffer, lda int, b backend.Buffer, ldb int, beta float32, c backend.Buffer, ldc int) {
	n.Gemm(transA, transB, M, N, K, alpha, a, lda, nbuf(b.(nbf16)), ldb, beta, c, ldc)
}

func (Naive) FromBF16(dst, src backend.Buffer, n int) { copy(fl(dst)[:n], src.(nbf16)[:n]) }

func (Naive) ToBF16(dst, src backend.Buffer, n int) {
	d, s := dst.(nbf16), fl(src)
	for i := range n {
		d[i] = backend.RoundBF16(s[i])
	}
}

func (Naive) AddBias(out, bias backend.Buffer, N, OC int) {
	o, b := fl(out), fl(bias)
	for n := range N {
		for c := range OC {
			o[n*OC+c] = float32(float64(o[n*OC+c]) + float64(b[c]))
		}
	}
}

func (Naive) ColumnSum(sum, x backend.Buffer, N, C int) {
	s, xs := fl(sum), fl(x)
	for c := range C {
		acc := float64(s[c])
		for n := range N {
			acc += float64(xs[n*C+c])
		}
		s[c] = float32(acc)
	}
}

func (Naive) Add(out, a, b backend.Buffer, n int) {
	o, x, y := fl(out), fl(a), fl(b)
	for i := range n {
		o[i] = float32(float64(x[i]) + float64(y[i]))
	}
}

func (Naive) Scale(x backend.Buffer, n int, alpha float32) {
	xs := fl(x)
	for i := range n {
		xs[i] = float32(float64(xs[i]) * float64(alpha))
	}
}

func (Naive) EmbeddingForward(out backend.Buffer, tokens []int, wte backend.Buffer, T, C int) {
	o, w := fl(out), fl(wte)
	for t := range T {
		copy(o[t*C:(t+1)*C], w[tokens[t]*C:(tokens[t]+1)*C])
	}
}

func (Naive) EmbeddingBackward(dwte, dout backend.Buffer, tokens []int, T, C int) {
	dw, d := fl(dwte), fl(dout)
	for t := range T {
		for c := range C {
			i := tokens[t]*C + c
			dw[i] = float32(float64(dw[i]) + float64(d[t*C+c]))
		}
	}
}

func (Naive) RMSNormForward(out, rstd, inp, weight backend.Buffer, N, C int, eps float32) {
	o, r, x, w := fl(out), fl(rstd), fl(inp), fl(weight)
	for n := range N {
		var ss float64
		for c := range C {
			v := float64(x[n*C+c])
			ss += v * v
		}
		rs := 1 / math.Sqrt(ss/float64(C)+float64(eps))
		r[n] = float32(rs)
		for c := range C {
			o[n*C+c] = float32(float64(x[n*C+c]) * rs * float64(w[c]))
		}
	}
}

// RMSNormBackward: y = w·x·r with r = (mean(x²)+ε)^−½ gives
// dx_j = r·w_j·dy_j − r³/C · x_j · Σᵢ dyᵢ·wᵢ·xᵢ and dw_j = Σₙ dy_j·x_j·r.
func (Naive) RMSNormBackward(dinp, dweight, dout, inp, weight, rstd backend.Buffer, N, C int) {
	dx, dw, dy, x, w, rs := fl(dinp), fl(dweight), fl(dout), fl(inp), fl(weight), fl(rstd)
	for n := range N {
		r := float64(rs[n])
		var dot float64
		for c := range C {
			dot += float64(dy[n*C+c]) * float64(w[c]) * float64(x[n*C+c])
		}
		for c := range C {
			i := n*C + c
			g := r*float64(w[c])*float64(dy[i]) - r*r*r/float64(C)*float64(x[i])*dot
			dx[i] = float32(float64(dx[i]) + g)
			dw[c] = float32(float64(dw[c]) + float64(dy[i])*float64(x[i])*r)
		}
	}
}

// rotate applies the rotate_half rotation by sign·angle to one head.
func rotate(x, cos, sin []float32, sign float64) {
	half := len(x) / 2
	for i := range half {
		c, s := float64(cos[i]), sign*float64(sin[i])
		a, b := float64(x[i]), float64(x[i+half])
		x[i], x[i+half] = float32(a*c-b*s), float32(b*c+a*s)
	}
}

func (Naive) rope(x, cos, sin backend.Buffer, pos []int, T, nHeads, hd int, sign float64) {
	xs, cs, sn := fl(x), fl(cos), fl(sin)
	half := hd / 2
	for t := range T {
		p := pos[t]
		for h := range nHeads {
			o := t*nHeads*hd + h*hd
			rotate(xs[o:o+hd], cs[p*half:(p+1)*half], sn[p*half:(p+1)*half], sign)
		}
	}
}

func (n Naive) RopeForward(x, cos, sin backend.Buffer, pos []int, T, nHeads, hd int) {
	n.rope(x, cos, sin, pos, T, nHeads, hd, 1)
}

func (n Naive) RopeBackward(dx, cos, sin backend.Buffer, pos []int, T, nHeads, hd int) {
	n.rope(dx, cos, sin, pos, T, nHeads, hd, -1)
}

func (Naive) AttentionStore([]int, int) int { return 0 }

// probs returns the causal softmax(q·kᵀ/√hd) of one head of a sequence of
// L rows: q rows at stride ldq, k rows at stride ldk.
func probs(q, k []float32, L, hd, ldq, ldk int) [][]float64 {
	scale := 1 / math.Sqrt(float64(hd))
	p := make([][]float64, L)
	for i := range L {
		p[i] = make([]float64, i+1)
		m := math.Inf(-1)
		for j := 0; j <= i; j++ {
			var s float64
			for d := range hd {
				s += float64(q[i*ldq+d]) * float64(k[j*ldk+d])
			}
			p[i][j] = s * scale
			m = max(m, p[i][j])
		}
		var sum float64
		for j := range p[i] {
			p[i][j] = math.Exp(p[i][j] - m)
			sum += p[i][j]
		}
		for j := range p[i] {
			p[i][j] /= sum
		}
	}
	return p
}

func (Naive) AttentionForward(out, _, q, k, v backend.Buffer, lens []int, nH, nKV, hd int) {
	o, qs, ks, vs := fl(out), fl(q), fl(k), fl(v)
	C, KV := nH*hd, nKV*hd
	t0 := 0
	for _, L := range lens {
		for h := range nH {
			g := h / (nH / nKV)
			p := probs(qs[t0*C+h*hd:], ks[t0*KV+g*hd:], L, hd, C, KV)
			for i := range L {
				for d := range hd {
					var s float64
					for j := 0; j <= i; j++ {
						s += p[i][j] * float64(vs[(t0+j)*KV+g*hd+d])
					}
					o[(t0+i)*C+h*hd+d] = float32(s)
				}
			}
		}
		t0 += L
	}
}

// AttentionBackward: dv_j += Σᵢ pᵢⱼ·doutᵢ; dPᵢⱼ = doutᵢ·v_j; dSᵢⱼ =
// pᵢⱼ(dPᵢⱼ − Σₖ pᵢₖ·dPᵢₖ); dqᵢ += Σⱼ dSᵢⱼ·k_j/√hd; dk_j += Σᵢ dSᵢⱼ·qᵢ/√hd.
func (Naive) AttentionBackward(dq, dk, dv, _, dout, _, q, k, v backend.Buffer, lens []int, nH, nKV, hd int) {
	dqs, dks, dvs, do, qs, ks, vs := fl(dq), fl(dk), fl(dv), fl(dout), fl(q), fl(k), fl(v)
	C, KV := nH*hd, nKV*hd
	scale := 1 / math.Sqrt(float64(hd))
	t0 := 0
	for _, L := range lens {
		for h := range nH {
			g := h / (nH / nKV)
			p := probs(qs[t0*C+h*hd:], ks[t0*KV+g*hd:], L, hd, C, KV)
			accQ, accK, accV := make([]float64, L*hd), make([]float64, L*hd), make([]float64, L*hd)
			for i := range L {
				dP := make([]float64, i+1)
				var dot float64
				for j := 0; j <= i; j++ {
					for d := range hd {
						dP[j] += float64(do[(t0+i)*C+h*hd+d]) * float64(vs[(t0+j)*KV+g*hd+d])
						accV[j*hd+d] += p[i][j] * float64(do[(t0+i)*C+h*hd+d])
					}
					dot += p[i][j] * dP[j]
				}
				for j := 0; j <= i; j++ {
					dS := p[i][j] * (dP[j] - dot) * scale
					for d := range hd {
						accQ[i*hd+d] += dS * float64(ks[(t0+j)*KV+g*hd+d])
						accK[j*hd+d] += dS * float64(qs[(t0+i)*C+h*hd+d])
					}
				}
			}
			for i := range L {
				for d := range hd {
					qi, ki := (t0+i)*C+h*hd+d, (t0+i)*KV+g*hd+d
					dqs[qi] = float32(float64(dqs[qi]) + accQ[i*hd+d])
					dks[ki] = float32(float64(dks[ki]) + accK[i*hd+d])
					dvs[ki] = float32(float64(dvs[ki]) + accV[i*hd+d])
				}
			}
		}
		t0 += L
	}
}

func (Naive) AttentionProbs(p, q, k backend.Buffer, L, hd, ldq, ldk int) {
	ps := fl(p)
	pr := probs(fl(q), fl(k), L, hd, ldq, ldk)
	for i := range L {
		for j := range L {
			ps[i*L+j] = 0
			if j <= i {
				ps[i*L+j] = float32(pr[i][j])
			}
		}
	}
}

func silu(g float64) (float64, float64) {
	s := 1 / (1 + math.Exp(-g))
	return g * s, s
}

func (Naive) SwiGLUForward(out, gate, up backend.Buffer, n int) {
	o, g, u := fl(out), fl(gate), fl(up)
	for i := range n {
		a, _ := silu(float64(g[i]))
		o[i] = float32(a * float64(u[i]))
	}
}

func (Naive) SwiGLURows(out, gateUp backend.Buffer, N, I int) {
	o, x := fl(out), fl(gateUp)
	for r := range N {
		for j := range I {
			a, _ := silu(float64(x[r*2*I+j]))
			o[r*I+j] = float32(a * float64(x[r*2*I+I+j]))
		}
	}
}

// SwiGLUBackward: dup += dout·silu(g); dgate += dout·up·σ(g)·(1 + g·(1 − σ(g))).
func (Naive) SwiGLUBackward(dgate, dup, dout, gate, up backend.Buffer, n int) {
	dg, du, d, g, u := fl(dgate), fl(dup), fl(dout), fl(gate), fl(up)
	for i := range n {
		x := float64(g[i])
		a, s := silu(x)
		du[i] = float32(float64(du[i]) + float64(d[i])*a)
		dg[i] = float32(float64(dg[i]) + float64(d[i])*float64(u[i])*s*(1+x*(1-s)))
	}
}

func (Naive) LogSoftmaxForward(lse, logprob, entropy, logits backend.Buffer, targets []int, N, V int) {
	ls, lp, en, z := fl(lse), fl(logprob), fl(entropy), fl(logits)
	for n := range N {
		row := z[n*V : (n+1)*V]
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, float64(v))
		}
		var s, u float64
		for _, v := range row {
			e := math.Exp(float64(v) - m)
			s += e
			u += e * (float64(v) - m)
		}
		l := m + math.Log(s)
		ls[n], en[n] = float32(l), float32(math.Log(s)-u/s)
		lp[n] = 0
		if t := targets[n]; t >= 0 {
			lp[n] = float32(float64(row[t]) - l)
		}
	}
}

// LogSoftmaxBackward: ∂logp_t/∂z_j = 1[j=t] − p_j and ∂H/∂z_j = −p_j(log p_j + H).
func (Naive) LogSoftmaxBackward(dlogits, logits, lse, entropy backend.Buffer, targets []int, dlogprob, dentropy backend.Buffer, N, V int) {
	dz, z, ls, en, dlp, den := fl(dlogits), fl(logits), fl(lse), fl(entropy), fl(dlogprob), fl(dentropy)
	for n := range N {
		l, H := float64(ls[n]), float64(en[n])
		for j := range V {
			logp := float64(z[n*V+j]) - l
			p := math.Exp(logp)
			g := -float64(den[n]) * p * (logp + H)
			if t := targets[n]; t >= 0 {
				ind := 0.0
				if j == t {
					ind = 1
				}
				g += float64(dlp[n]) * (ind - p)
			}
			dz[n*V+j] = float32(g)
		}
	}
}

// ncache is Naive's KV cache: per slot, per layer, per position, the key
// and value rows (KV floats each).
type ncache struct {
	layers, maxLen int
	k, v           map[int][][][]float32 // slot → layer → position → row
}

func (Naive) NewKVCache(layers, nKV, hd, maxLen int) (backend.KVCache, error) {
	return &ncache{layers: layers, maxLen: maxLen, k: map[int][][][]float32{}, v: map[int][][][]float32{}}, nil
}

func (c *ncache) Reserve(slot, n int) error {
	if n > c.maxLen {
		return fmt.Errorf("kv cache: %d positions (at most %d)", n, c.maxLen)
	}
	if _, ok := c.k[slot]; !ok {
		c.k[slot], c.v[slot] = make([][][]float32, c.layers), make([][][]float32, c.layers)
	}
	return nil
}

func (c *ncache) Drop(slot int) { delete(c.k, slot); delete(c.v, slot) }
func (c *ncache) Free()         { clear(c.k); clear(c.v) }

func (Naive) DecodeAttention(out, qkv, bias backend.Buffer, cache backend.KVCache, layer int, seqs []backend.DecodeSeq, cos, sin backend.Buffer, nH, nKV, hd int) {
	c := cache.(*ncache)
	o, x, b, cs, sn := fl(out), fl(qkv), fl(bias), fl(cos), fl(sin)
	C, KV := nH*hd, nKV*hd
	W, half := C+2*KV, hd/2
	r := 0
	for _, s := range seqs {
		for j := range s.Rows {
			p := s.Past + j
			row := make([]float32, W)
			for i := range W {
				v := float64(x[(r+j)*W+i])
				if b != nil {
					v += float64(b[i])
				}
				row[i] = float32(v)
			}
			for h := range nH + nKV { // query heads, then key heads
				rotate(row[h*hd:(h+1)*hd], cs[p*half:(p+1)*half], sn[p*half:(p+1)*half], 1)
			}
			ks, vs := &c.k[s.Slot][layer], &c.v[s.Slot][layer]
			*ks, *vs = append((*ks)[:p], row[C:C+KV]), append((*vs)[:p], row[C+KV:])
			scale := 1 / math.Sqrt(float64(hd))
			for h := range nH {
				g := h / (nH / nKV)
				sc := make([]float64, p+1)
				m := math.Inf(-1)
				for t := range p + 1 {
					for d := range hd {
						sc[t] += float64(row[h*hd+d]) * float64((*ks)[t][g*hd+d])
					}
					sc[t] *= scale
					m = max(m, sc[t])
				}
				var sum float64
				for t := range sc {
					sc[t] = math.Exp(sc[t] - m)
					sum += sc[t]
				}
				for d := range hd {
					var acc float64
					for t := range sc {
						acc += sc[t] / sum * float64((*vs)[t][g*hd+d])
					}
					o[(r+j)*C+h*hd+d] = float32(acc)
				}
			}
		}
		r += s.Rows
	}
}

func (Naive) AdamW(params, m, v, grads backend.Buffer, n int, s backend.AdamWScalars) {
	p, mm, vv, g := fl(params), fl(m), fl(v), fl(grads)
	for i := range n {
		gi := float64(g[i])
		mi := float64(s.Beta1)*float64(mm[i]) + float64(s.OneMinusBeta1)*gi
		vi := float64(s.Beta2)*float64(vv[i]) + float64(s.OneMinusBeta2)*gi*gi
		mm[i], vv[i] = float32(mi), float32(vi)
		denom := math.Sqrt(vi)/float64(s.Bc2Sqrt) + float64(s.Eps)
		p[i] = float32(float64(p[i])*float64(s.Decay) - float64(s.StepSize)*(mi/denom))
	}
}

func (Naive) GradNorm(g backend.Buffer, n int) (float64, error) {
	var s float64
	for _, v := range fl(g)[:n] {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s), nil
}

// Sample is sample.Sampler row by row: the definition of the draws.
func (Naive) Sample(logits backend.Buffer, rows, V int, o sample.Options, rngs []*sample.RNG) ([]int, error) {
	if err := backend.CheckSample(logits, rows, V, o, rngs); err != nil {
		return nil, err
	}
	var s sample.Sampler
	x, out := fl(logits), make([]int, rows)
	for r := range rows {
		out[r] = s.Sample(x[r*V:(r+1)*V], o, rngs[r])
	}
	return out, nil
}
