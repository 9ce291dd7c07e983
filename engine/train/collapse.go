package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/rollout"
	"github.com/ragen-go/ragen/engine/tokenizer"
)

// RAGEN-2's template-collapse diagnostics (ragen/trainer/collapse_metrics.py,
// first-turn sampling). Entropy collapse makes the policy deterministic per
// prompt (low H(Z|X)); template collapse makes its reasoning independent of
// the prompt (low I(X;Z)) while the entropy may hold. I(X;Z) is estimated
// under the batch's empirical prompt distribution, uniform over the N
// distinct prompts of the sampled pairs:
//
//	ℓ_ij      = log p(z_i | x_j)                  teacher forcing, [pairs × prompts]
//	matched_i = ℓ_i,g(i)                          g(i): pair i's own prompt
//	marginal_i = logsumexp_j ℓ_ij − log N          log of the uniform mixture
//	Î(X;Z)    = mean_i (matched_i − marginal_i)   ≤ log N
//
// per token (ℓ the mean over z_i's tokens) and per sequence (the sum).
const (
	collapseSamples = 64   // pairs sampled per computation (RAGEN-2 num_samples)
	collapseStdEps  = 1e-3 // z-score denominator: std + eps
	collapseEMA     = 0.9  // decay of the marginal std's EMA over computations
)

// crossScores is the cross-scoring matrix of n sampled pairs over N
// distinct prompts.
type crossScores struct {
	tok, seq [][]float64 // [n][N] ℓ_ij per token (mean over z_i) and per sequence (sum)
	col      []int       // [n] g(i), the column of pair i's own prompt
	sig      []int       // [N] columns whose prompts are the same token sequence share a signature
}

// collapseEMAs carries the marginal std's EMA between computations.
type collapseEMAs struct {
	set      bool
	std, seq float64
}

// collapseStats computes RAGEN-2's metrics from a cross-scoring matrix
// (_compute_metrics_for_pairs): nothing with fewer than 2 prompts.
func collapseStats(s crossScores, ema *collapseEMAs) map[string]float64 {
	N := len(s.sig)
	if N < 2 || len(s.col) == 0 {
		return nil
	}
	matched, marginal := matchedMarginal(s.tok, s.col)
	matchedSeq, marginalSeq := matchedMarginal(s.seq, s.col)
	m := map[string]float64{}
	mm, mg := mean(matched), mean(marginal)
	mms, mgs := mean(matchedSeq), mean(marginalSeq)
	m[metrics.CollapseMI] = mm - mg
	m[metrics.CollapseMISeq] = mms - mgs
	m[metrics.CollapseMIUpper] = math.Log(float64(N))
	m[metrics.CollapseMatched] = mm
	m[metrics.CollapseMarginal] = mg
	m[metrics.CollapseCondEnt] = -mm
	m[metrics.CollapseReasEnt] = -mg
	m[metrics.CollapseCondEntSeq] = -mms
	m[metrics.CollapseReasEntSeq] = -mgs
	retrieval(m, s)

	std, stdSeq := popStd(marginal), popStd(marginalSeq)
	m[metrics.CollapseStd] = std
	m[metrics.CollapseStdSeq] = stdSeq
	m[metrics.CollapseZ] = zscore(matched, marginal, std)
	m[metrics.CollapseZSeq] = zscore(matchedSeq, marginalSeq, stdSeq)
	if !ema.set {
		ema.set, ema.std, ema.seq = true, std, stdSeq
	} else {
		ema.std = collapseEMA*ema.std + (1-collapseEMA)*std
		ema.seq = collapseEMA*ema.seq + (1-collapseEMA)*stdSeq
	}
	m[metrics.CollapseStdEMA] = ema.std
	m[metrics.CollapseStdEMASeq] = ema.seq
	m[metrics.CollapseZEMA] = zscore(matched, marginal, ema.std)
	m[metrics.CollapseZEMASeq] = zscore(matchedSeq, marginalSeq, ema.seq)
	return m
}

// matchedMarginal returns ℓ_i,g(i) and logsumexp_j ℓ_ij − log N of each row.
func matchedMarginal(l [][]float64, col []int) (matched, marginal []float64) {
	matched = make([]float64, len(l))
	marginal = make([]float64, len(l))
	for i, row := range l {
		matched[i] = row[col[i]]
		hi := slices.Max(row)
		var s float64
		for _, v := range row {
			s += math.Exp(v - hi)
		}
		marginal[i] = hi + math.Log(s) - math.Log(float64(len(row)))
	}
	return matched, marginal
}

// zscore is mean_i (matched_i − marginal_i) / (std + eps).
func zscore(matched, marginal []float64, std float64) float64 {
	var s float64
	for i := range matched {
		s += (matched[i] - marginal[i]) / (std + collapseStdEps)
	}
	return s / float64(len(matched))
}

// retrieval adds the retrieval accuracy of each pair's prompt from its
// reasoning, argmax_j ℓ_ij (per token), and within the top 2, 4, 8, with
// their chance levels. A column whose prompt equals the true one counts as
// correct (RAGEN-2's column signatures): the chance level is the mean over
// pairs of the share of columns holding its prompt, k·chance (at most 1)
// within the top k.
func retrieval(m map[string]float64, s crossScores) {
	N := len(s.sig)
	count := map[int]int{}
	for _, g := range s.sig {
		count[g]++
	}
	kmax := min(8, N)
	var acc, chance float64
	var accK [3]float64
	ks := [3]int{2, 4, 8}
	order := make([]int, N)
	for i, row := range s.tok {
		truth := s.sig[s.col[i]]
		chance += float64(count[truth]) / float64(N)
		for j := range order {
			order[j] = j
		}
		// Descending ℓ; ties keep the lower column first, as argmax.
		sort.SliceStable(order, func(a, b int) bool { return row[order[a]] > row[order[b]] })
		if s.sig[order[0]] == truth {
			acc++
		}
		for q, k := range ks {
			for _, j := range order[:min(k, kmax)] {
				if s.sig[j] == truth {
					accK[q]++
					break
				}
			}
		}
	}
	n := float64(len(s.tok))
	acc, chance = acc/n, chance/n
	m[metrics.CollapseRetrieval] = acc
	m[metrics.CollapseChance] = chance
	m[metrics.CollapseAboveChance] = acc - chance
	names := [3][3]string{
		{metrics.CollapseRetrieval2, metrics.CollapseChance2, metrics.CollapseAboveChance2},
		{metrics.CollapseRetrieval4, metrics.CollapseChance4, metrics.CollapseAboveChance4},
		{metrics.CollapseRetrieval8, metrics.CollapseChance8, metrics.CollapseAboveChance8},
	}
	for q, k := range ks {
		a, c := accK[q]/n, min(1, chance*float64(min(k, kmax)))
		m[names[q][0]], m[names[q][1]], m[names[q][2]] = a, c, a-c
	}
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// popStd is the population standard deviation (torch std(unbiased=False)).
func popStd(x []float64) float64 {
	mu := mean(x)
	var s float64
	for _, v := range x {
		s += (v - mu) * (v - mu)
	}
	return math.Sqrt(s / float64(len(x)))
}

// turnPairs splits each sampled turn k of a trajectory into the prompt
// x_k, the whole conversation up to the turn's first sampled token (the
// forced <think> included), and the reasoning z_k: the sampled tokens
// inside the think block from there. z_k is empty when the turn has no
// reasoning or never closes </think> (RAGEN-2 takes <think>(.*?)</think>).
// Unlike RAGEN-2, which re-tokenizes the stripped reasoning text, z_k is
// the sampled tokens themselves.
func turnPairs(tr *rollout.Trajectory) (xs, zs [][]int) {
	k := 0
	for a := range tr.Tokens {
		if !tr.Agent[a] || (a > 0 && tr.Agent[a-1] && !tr.TurnEnd[a-1]) {
			continue // not the first sampled token of a turn
		}
		var z []int
		if k < len(tr.Turns) && strings.Contains(tr.Turns[k].Response, tokenizer.ThinkEnd) {
			e := a
			for e < len(tr.Tokens) && tr.Agent[e] && tr.Span[e] == rollout.SpanThink {
				e++
				if tr.TurnEnd[e-1] {
					break
				}
			}
			z = tr.Tokens[a:e]
		}
		xs, zs = append(xs, tr.Tokens[:a]), append(zs, z)
		k++
	}
	return xs, zs
}

// firstTurn is turnPairs' first turn; ok is false without a sampled turn.
func firstTurn(tr *rollout.Trajectory) (x, z []int, ok bool) {
	xs, zs := turnPairs(tr)
	if len(xs) == 0 || len(tr.Turns) == 0 {
		return nil, nil, false
	}
	return xs[0], zs[0], true
}

// collapseMetrics adds the template-collapse metrics of a step's rollouts
// to m when the step is due: step 1 and every CollapseEvery steps. It only
// reads the policy (forward passes, no state kept for a backward) and
// draws its sample from its own stream, so no other number of the run
// changes.
func (t *Trainer) collapseMetrics(step int, trajs []*rollout.Trajectory, m map[string]float64) error {
	n := t.cfg.CollapseEvery
	if n <= 0 || (step != 1 && step%n != 0) {
		return nil
	}
	start := time.Now()
	var xs, zs [][]int
	var groups []int
	total := 0
	for _, tr := range trajs {
		x, z, ok := firstTurn(tr)
		if !ok {
			continue
		}
		total++
		if len(z) > 0 {
			xs, zs, groups = append(xs, x), append(zs, z), append(groups, tr.Group)
		}
	}
	m[metrics.CollapseNumTotal] = float64(total)
	m[metrics.CollapseNumValid] = float64(len(zs))
	if total > 0 {
		m[metrics.CollapseValidRate] = float64(len(zs)) / float64(total)
	} else {
		m[metrics.CollapseValidRate] = 0
	}
	pick := collapseSample(len(zs), mix(uint64(t.cfg.Seed), 0xc011a95e, uint64(int64(step))))
	s, err := t.crossScore(xs, zs, groups, pick)
	if err != nil {
		return fmt.Errorf("step %d: collapse metrics: %w", step, err)
	}
	for k, v := range collapseStats(s, &t.collapseEMA) {
		m[k] = v
	}
	if t.cfg.CollapseTrajectory {
		if err := t.trajectoryCollapse(step, trajs, m); err != nil {
			return fmt.Errorf("step %d: collapse metrics: %w", step, err)
		}
	}
	m[metrics.TimeCollapse] = time.Since(start).Seconds()
	return nil
}

// trajectoryCollapse adds RAGEN-2's trajectory-sampled variant
// (multi_turn_enabled, collapse_trajectory_sample/*): the same statistics
// over (prompt, reasoning) pairs of every turn, not just the first. Up to
// 64 pairs are drawn trajectory-uniformly, Pr(m, t) = 1/M · 1/T_m over the
// M trajectories and the T_m turns of m with reasoning (with replacement;
// a draw of a trajectory without one is lost), so a long episode weighs
// as much as a short one. Each pair is its own column, x its own turn's
// context (the history before it included): retrieval asks which context
// a reasoning was written in, and the same context drawn twice, or the
// first turns of one group, share a signature. collapse/valid_thinking_rate
// is the share of all sampled turns that have reasoning.
func (t *Trainer) trajectoryCollapse(step int, trajs []*rollout.Trajectory, m map[string]float64) error {
	var xs, zs [][][]int // [trajectory][turn with reasoning]
	counts := make([]int, len(trajs))
	total, valid := 0, 0
	for i, tr := range trajs {
		px, pz := turnPairs(tr)
		var vx, vz [][]int
		for k, z := range pz {
			if len(z) > 0 {
				vx, vz = append(vx, px[k]), append(vz, z)
			}
		}
		xs, zs = append(xs, vx), append(zs, vz)
		counts[i] = len(vz)
		total, valid = total+len(pz), valid+len(vz)
	}
	if total > 0 {
		m[metrics.CollapseValidThinking] = float64(valid) / float64(total)
	}
	var px, pz [][]int
	var cols, pick []int
	for k, p := range trajectorySample(counts, mix(uint64(t.cfg.Seed), 0x7a1ec7, uint64(int64(step)))) {
		px, pz = append(px, xs[p[0]][p[1]]), append(pz, zs[p[0]][p[1]])
		cols, pick = append(cols, k), append(pick, k)
	}
	s, err := t.crossScore(px, pz, cols, pick)
	if err != nil {
		return err
	}
	for k, v := range collapseStats(s, &t.collapseEMATraj) {
		m[metrics.CollapseTrajPrefix+strings.TrimPrefix(k, metrics.CollapsePrefix)] = v
	}
	return nil
}

// trajectorySample draws min(64, Σ counts) times a trajectory m uniformly
// and, if it has any, one of its counts[m] turns uniformly (RAGEN-2's
// _sample_trajectory_uniform), from a stream of its own seeded by seed:
// (trajectory, turn) pairs in draw order.
func trajectorySample(counts []int, seed uint64) [][2]int {
	total := 0
	for _, c := range counts {
		total += c
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	var out [][2]int
	for range min(collapseSamples, total) {
		m := r.IntN(len(counts))
		if counts[m] > 0 {
			out = append(out, [2]int{m, r.IntN(counts[m])})
		}
	}
	return out
}

// collapseSample picks up to collapseSamples of n indices, uniformly
// without replacement from a stream of its own seeded by seed, in
// increasing order.
func collapseSample(n int, seed uint64) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if n <= collapseSamples {
		return idx
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := 0; i < collapseSamples; i++ { // partial Fisher–Yates
		j := i + r.IntN(n-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	idx = idx[:collapseSamples]
	slices.Sort(idx)
	return idx
}

// crossScore builds ℓ_ij for the picked pairs: one column per distinct
// group among them (its first member's prompt, as RAGEN-2's representative
// prompt), every x_j ++ z_i scored by the policy, packed into forward
// passes of at most maxForwardTokens tokens (MicroBatchTokens if smaller).
// A z_i longer than the context leaves after the longest prompt is cut to
// fit, the same for every column.
func (t *Trainer) crossScore(xs, zs [][]int, groups, pick []int) (crossScores, error) {
	var s crossScores
	colOf := map[int]int{}
	var prompts [][]int
	var ids []int
	for _, i := range pick {
		if _, ok := colOf[groups[i]]; !ok {
			ids = append(ids, groups[i])
		}
		colOf[groups[i]] = 0
	}
	sort.Ints(ids)
	for j, g := range ids {
		colOf[g] = j
	}
	prompts = make([][]int, len(ids))
	for _, i := range pick {
		if j := colOf[groups[i]]; prompts[j] == nil {
			prompts[j] = xs[i]
		}
	}
	s.sig = make([]int, len(prompts))
	for j, p := range prompts {
		s.sig[j] = j
		for k := range j {
			if slices.Equal(prompts[k], p) {
				s.sig[j] = s.sig[k]
				break
			}
		}
	}
	N := len(prompts)
	if N < 2 {
		return s, nil // RAGEN-2 reports nothing with one prompt
	}
	maxX := 0
	for _, p := range prompts {
		maxX = max(maxX, len(p))
	}
	room := t.policy.Config.MaxPositions - maxX
	s.col = make([]int, len(pick))
	s.tok = make([][]float64, len(pick))
	s.seq = make([][]float64, len(pick))
	z := make([][]int, len(pick))
	for r, i := range pick {
		s.col[r] = colOf[groups[i]]
		s.tok[r], s.seq[r] = make([]float64, N), make([]float64, N)
		z[r] = zs[i][:min(len(zs[i]), room)]
	}
	limit := t.passLimit(maxForwardTokens)
	type cell struct{ r, j int }
	var cells []cell
	var tokens, lens []int
	var targets []bool // the response's tokens: their log-probs are read
	flush := func() error {
		if len(cells) == 0 {
			return nil
		}
		out, err := t.policy.Forward(tokens, lens, model.Want{LM: true, Targets: targets, NoGrad: true})
		if err != nil {
			return err
		}
		o := 0
		for k, c := range cells {
			lx := len(prompts[c.j])
			var sum float64
			for _, lp := range out.LogProb[o+lx : o+lens[k]] {
				sum += float64(lp)
			}
			s.seq[c.r][c.j] = sum
			s.tok[c.r][c.j] = sum / float64(max(1, lens[k]-lx))
			o += lens[k]
		}
		cells, tokens, lens, targets = cells[:0], tokens[:0], lens[:0], targets[:0]
		return nil
	}
	for j, p := range prompts {
		for r := range pick {
			L := len(p) + len(z[r])
			if len(cells) > 0 && len(tokens)+L > limit {
				if err := flush(); err != nil {
					return s, err
				}
			}
			cells = append(cells, cell{r, j})
			tokens = append(append(tokens, p...), z[r]...)
			lens = append(lens, L)
			targets = append(targets, make([]bool, len(p))...)
			for range z[r] {
				targets = append(targets, true)
			}
		}
	}
	return s, flush()
}
