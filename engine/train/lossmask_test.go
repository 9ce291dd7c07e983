package train

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/rollout"
)

// maskTraj is two turns laid out by hand:
//
//	0 1 2 | 3     4     5      6      7      | 8 9 | 10     11
//	ctx   | think think format answer format | ctx | answer format
//	      | turn 1 (5 tokens), ends at 7      |     | turn 2, ends at 11
func maskTraj() *rollout.Trajectory {
	const (
		c = rollout.SpanContext
		t = rollout.SpanThink
		a = rollout.SpanAnswer
		f = rollout.SpanFormat
	)
	tr := &rollout.Trajectory{
		Tokens:  []int{1, 2, 3, 10, 11, 12, 13, 14, 4, 5, 15, 16},
		Agent:   []bool{false, false, false, true, true, true, true, true, false, false, true, true},
		TurnEnd: make([]bool, 12),
		Span:    []rollout.Span{c, c, c, t, t, f, a, f, c, c, a, f},
	}
	tr.TurnEnd[7], tr.TurnEnd[11] = true, true
	return tr
}

// at marks the listed positions of a 12-token mask.
func at(ks ...int) []bool {
	m := make([]bool, 12)
	for _, k := range ks {
		m[k] = true
	}
	return m
}

func TestActorMaskRules(t *testing.T) {
	tr := maskTraj()
	cases := []struct {
		rule string
		fn   func(MaskToken) (bool, error)
		want []bool
	}{
		{"", nil, tr.Agent},
		{MaskAll, nil, tr.Agent},
		{MaskAnswer, nil, at(6, 10)},
		{MaskThink, nil, at(3, 4)},
		{"turn == turns", func(m MaskToken) (bool, error) { return m.Turn == m.Turns, nil }, at(10, 11)},
		{"pos == 0", func(m MaskToken) (bool, error) { return m.Pos == 0, nil }, at(3, 10)},
		{"pos == len−1", func(m MaskToken) (bool, error) { return m.Pos == m.Len-1, nil }, at(7, 11)},
		{"turn 1 not format", func(m MaskToken) (bool, error) {
			return m.Turn == 1 && m.Span != rollout.SpanFormat, nil
		}, at(3, 4, 6)},
	}
	for _, c := range cases {
		cfg := Default()
		cfg.LossMask, cfg.LossMaskFunc = c.rule, c.fn
		got, err := cfg.actorMask([]*rollout.Trajectory{tr})
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		if !reflect.DeepEqual(got[0], c.want) {
			t.Errorf("%s: mask %v, want %v", c.rule, got[0], c.want)
		}
	}
	// The default is the agent mask itself, not a copy: the update reads
	// the very same tokens it always did.
	cfg := Default()
	if got, _ := cfg.actorMask([]*rollout.Trajectory{tr}); &got[0][0] != &tr.Agent[0] {
		t.Error("the default loss mask must be the trajectory's agent mask")
	}

	cfg.LossMask = MaskAnswer
	bare := maskTraj()
	bare.Span = nil
	if _, err := cfg.actorMask([]*rollout.Trajectory{bare}); err == nil ||
		err.Error() != "loss_mask answer: trajectory 0 has no token spans (0 for 12 tokens)" {
		t.Errorf("no spans: err = %v", err)
	}
	cfg.LossMask, cfg.LossMaskFunc = "x", func(MaskToken) (bool, error) { return false, errors.New("boom") }
	if _, err := cfg.actorMask([]*rollout.Trajectory{tr}); err == nil ||
		err.Error() != "loss mask of trajectory 0 (group 0, seed 0), turn 1, token 0: boom" {
		t.Errorf("failing rule: err = %v", err)
	}
	cfg = Default()
	cfg.LossMask = "reasoning"
	if err := cfg.Validate(); err == nil || err.Error() != `loss_mask: must be one of all, answer, think (got "reasoning")` {
		t.Errorf("unknown rule: err = %v", err)
	}
}

// The tokens a loss mask drops get no gradient: the actor loss's DLogp and
// DEntropy are 0 on them, and the model's parameter gradient does not
// change when their advantages do. With every token in the loss it does.
func TestLossMaskZeroGradient(t *testing.T) {
	cfg := Default()
	cfg.Model = "tiny"
	mc, err := cfg.ModelConfig(32)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(mc, 7)
	if err != nil {
		t.Fatal(err)
	}
	tr := maskTraj()
	trajs := []*rollout.Trajectory{tr}
	tokens, lens := pack(trajs)
	acfg := algo.StarPOS()
	acfg.EntropyCoef = 0.01

	// grad returns the parameter gradient of the actor loss under rule,
	// with advantage 1 on every agent token but bump on token 3 (a think
	// token, off the answer mask).
	grad := func(rule string, bump float64) ([]float32, algo.ActorLoss) {
		t.Helper()
		c := cfg
		c.LossMask = rule
		mask, err := c.actorMask(trajs)
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Forward(tokens, lens, model.Want{LM: true})
		if err != nil {
			t.Fatal(err)
		}
		logp, ent := unpack(out.LogProb, lens), unpack(out.Entropy, lens)
		adv := [][]float64{make([]float64, len(tokens))}
		for k, on := range tr.Agent {
			if on {
				adv[0][k] = 1
			}
		}
		adv[0][3] = bump
		loss, err := algo.ComputeActorLoss(&acfg, algo.ActorInputs{Mask: mask, Logp: logp, OldLogp: logp, Adv: adv, Entropy: ent})
		if err != nil {
			t.Fatal(err)
		}
		m.ZeroGrad()
		if err := m.Backward(model.Grad{LogProb: packGrad(loss.DLogp, len(tokens)), Entropy: packGrad(loss.DEntropy, len(tokens))}); err != nil {
			t.Fatal(err)
		}
		if err := m.SyncGrads(); err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), m.Grads.Data...), loss
	}

	g1, loss := grad(MaskAnswer, 1)
	for k := range tokens {
		on := k == 6 || k == 10
		if (loss.DLogp[0][k] != 0) != on || (loss.DEntropy[0][k] != 0) != on {
			t.Errorf("answer mask, token %d: DLogp %g, DEntropy %g", k, loss.DLogp[0][k], loss.DEntropy[0][k])
		}
	}
	g2, _ := grad(MaskAnswer, -5)
	if !reflect.DeepEqual(g1, g2) {
		t.Error("answer mask: the gradient changed with the advantage of a masked-out token")
	}
	nonzero := false
	for _, g := range g1 {
		nonzero = nonzero || g != 0
	}
	if !nonzero {
		t.Error("answer mask: the gradient is zero everywhere")
	}
	a1, _ := grad(MaskAll, 1)
	a2, _ := grad(MaskAll, -5)
	if reflect.DeepEqual(a1, a2) {
		t.Error("all tokens: the gradient must change with token 3's advantage")
	}
}
