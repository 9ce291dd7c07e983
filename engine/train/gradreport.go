package train

import (
	"fmt"
	"time"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/metrics"
)

// RAGEN's gradient analysis (ragen/trainer/gradient_reporter.py and the
// grad_component_analysis branch of its dp_actor.update_policy). On a due
// step, before the update, the kept batch is split into buckets of whole
// groups by in-group reward std (algo.RewardStdBuckets); on each bucket
// the actor loss is computed as the update computes a minibatch's — the
// bucket is the minibatch, aggregated over its own tokens — and each of
// its terms is back-propagated alone, from zero gradients:
//
//	task     ∇ agg(L_PPO)             always
//	entropy  ∇ (−c_H · agg(H))        when entropy_coef > 0
//	kl       ∇ (β · agg(k(π, π_ref))) when the KL is in the loss
//
// and the L2 norm of each gradient over the trainable parameters is
// reported, also divided by the bucket's trajectories (per_sample) and by
// its tokens under the loss mask (per_token). No optimizer step is taken
// and the gradients are zeroed after, so the update that follows — and
// every number of the run but the report's own — is what it would have
// been without it. Under data parallelism each term's gradient is the
// exact sum over the ranks (actorGradsShared): the norms are the whole
// bucket's, the same on every rank.

// gradReportDue reports whether step runs the gradient analysis: step 1
// and every GradientReportEvery steps after it, as RAGEN's
// (global_steps − 1) % gradient_analysis_every == 0.
func (c *Config) gradReportDue(step int) bool {
	n := c.GradientReportEvery
	return n > 0 && (step-1)%n == 0
}

// gradReportBuckets is GradientReportBuckets, 0 meaning RAGEN's 6.
func (c *Config) gradReportBuckets() int {
	if c.GradientReportBuckets > 0 {
		return c.GradientReportBuckets
	}
	return algo.DefaultBuckets
}

// gradientReport adds the gradient analysis of b to m.
func (t *Trainer) gradientReport(step int, b *batch, m map[string]float64) error {
	start := time.Now()
	group := make([]int, len(b.trajs))
	for i, tr := range b.trajs {
		group[i] = tr.Group
	}
	buckets, err := algo.RewardStdBuckets(b.rewards, group, t.cfg.gradReportBuckets(), t.cfg.GradientReportBucketMode)
	if err != nil {
		return fmt.Errorf("step %d: gradient analysis: %w", step, err)
	}
	for _, bk := range buckets {
		if err := t.reportBucket(step, b, bk, m); err != nil {
			return fmt.Errorf("step %d: gradient analysis of %s: %w", step, bk.Name, err)
		}
	}
	t.policy.ZeroGrad()
	m[metrics.TimeGradReport] = time.Since(start).Seconds()
	return nil
}

// gradTerm is one term of the actor loss in the report: its norm's and
// its value's metric names, its gradient and its value.
type gradTerm struct {
	norm, loss string
	grad       lossTerm
	value      func(*algo.ActorLoss) float64
}

// gradTerms are the actor loss's terms, entropy and KL only when they are
// in the loss (as RAGEN).
func (t *Trainer) gradTerms() []gradTerm {
	a := &t.cfg.Algo
	terms := []gradTerm{{metrics.GradTask, metrics.GradLossPolicy,
		func(l *algo.ActorLoss) ([][]float64, [][]float64) { return l.DLogpPG, nil },
		func(l *algo.ActorLoss) float64 { return l.PGLoss }}}
	if a.EntropyCoef > 0 {
		terms = append(terms, gradTerm{metrics.GradEntropy, metrics.GradLossEntropy,
			func(l *algo.ActorLoss) ([][]float64, [][]float64) { return nil, l.DEntropy },
			func(l *algo.ActorLoss) float64 { return -a.EntropyCoef * l.Entropy }})
	}
	if a.KLPlacement == algo.KLLoss && a.KLCoef > 0 {
		terms = append(terms, gradTerm{metrics.GradKL, metrics.GradLossKL,
			func(l *algo.ActorLoss) ([][]float64, [][]float64) { return l.DLogpKL, nil },
			func(l *algo.ActorLoss) float64 { return a.KLCoef * l.KLRef }})
	}
	return terms
}

// reportLimit bounds the tokens of the report's passes: MicroBatchTokens,
// else the update's largest minibatch of b, so that the report (whose
// "all" bucket is the whole batch) holds no more activations at once than
// the update. The gradient is the same, accumulated over the passes.
func (t *Trainer) reportLimit(b *batch) int {
	if t.cfg.MicroBatchTokens > 0 {
		return t.cfg.MicroBatchTokens
	}
	n := len(b.trajs)
	mbs := min(t.cfg.MiniBatches, n)
	limit := 0
	for k := range mbs {
		limit = max(limit, tokenCount(b.trajs[k*n/mbs:(k+1)*n/mbs]))
	}
	return limit
}

// reportBucket computes one bucket's metrics. A bucket whose trajectories
// have no token under the loss mask reports its size only.
func (t *Trainer) reportBucket(step int, b *batch, bk algo.Bucket, m map[string]float64) error {
	name := func(s string) string { return metrics.GradBucket(bk.Name, s) }
	n := len(bk.Members)
	m[name(metrics.GradSampleCount)] = float64(n)
	m[name(metrics.GradSamplePct)] = float64(n) / float64(len(b.trajs))
	m[name(metrics.GradGroupCount)] = float64(len(bk.Groups))
	lo, hi := bk.Std[0], bk.Std[0]
	for _, s := range bk.Std {
		lo, hi = min(lo, s), max(hi, s)
	}
	m[name(metrics.GradStdMean)] = bk.StdMean()
	m[name(metrics.GradStdMin)] = lo
	m[name(metrics.GradStdMax)] = hi

	sub := b.subset(bk.Members)
	tokens := 0
	for _, row := range sub.actorMask {
		for _, on := range row {
			if on {
				tokens++
			}
		}
	}
	terms := t.gradTerms()
	grad := make([]lossTerm, len(terms))
	for k, g := range terms {
		grad[k] = g.grad
	}
	norms := make([]float64, len(terms))
	grads := t.actorGrads
	if t.cfg.Comm != nil {
		grads = t.actorGradsShared
	}
	loss, ok, err := grads(step, sub, 0, n, t.reportLimit(b), grad, func(k int) error {
		var err error
		norms[k], err = t.policy.GradNorm()
		return err
	})
	if err != nil || !ok {
		return err
	}
	for k, g := range terms {
		m[name(g.norm)] = norms[k]
		m[name(metrics.GradPerSample+g.norm)] = norms[k] / float64(n)
		if tokens > 0 {
			m[name(metrics.GradPerToken+g.norm)] = norms[k] / float64(tokens)
		}
		m[name(g.loss)] = g.value(&loss)
	}
	m[name(metrics.GradLossTotal)] = loss.Loss // the sum of the terms
	return nil
}
