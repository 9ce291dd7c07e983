package train

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/rollout"
)

// Four pairs over two prompts, worked by hand:
//
//	ℓ = [−1 −2; −1 −1; −3 −1; −2 −2], own prompts g = (0, 0, 1, 1)
//	matched  = (−1, −1, −1, −2), mean −1.25
//	marginal = logsumexp − log 2 = (−1.379886, −1, −1.566219, −2), mean −1.486526
//	MI = −1.25 + 1.486526 = 0.236526 ≤ log 2
//	std(marginal) = 0.359891, z = 0.236526 / (0.359891 + 0.001) = 0.655395
//	argmax = (0, 0 (tie: first), 1, 0 (tie)): retrieval 3/4, chance 1/2;
//	top 2 of 2 columns always holds the truth: @2 = 1, chance min(1, 2·½) = 1.
func TestCollapseStatsByHand(t *testing.T) {
	l := [][]float64{{-1, -2}, {-1, -1}, {-3, -1}, {-2, -2}}
	s := crossScores{tok: l, seq: l, col: []int{0, 0, 1, 1}, sig: []int{0, 1}}
	var ema collapseEMAs
	m := collapseStats(s, &ema)
	want := map[string]float64{
		metrics.CollapseMI:           0.236526,
		metrics.CollapseMISeq:        0.236526,
		metrics.CollapseMIUpper:      math.Ln2,
		metrics.CollapseMatched:      -1.25,
		metrics.CollapseMarginal:     -1.486526,
		metrics.CollapseCondEnt:      1.25,
		metrics.CollapseReasEnt:      1.486526,
		metrics.CollapseStd:          0.359891,
		metrics.CollapseZ:            0.655395,
		metrics.CollapseStdEMA:       0.359891, // the first value
		metrics.CollapseZEMA:         0.655395,
		metrics.CollapseRetrieval:    0.75,
		metrics.CollapseChance:       0.5,
		metrics.CollapseAboveChance:  0.25,
		metrics.CollapseRetrieval2:   1,
		metrics.CollapseChance2:      1,
		metrics.CollapseAboveChance2: 0,
		metrics.CollapseRetrieval8:   1,
		metrics.CollapseChance8:      1,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || math.Abs(got-v) > 1e-6 {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}

	// The EMA moves a tenth of the way to the next std: a matrix whose
	// marginal std is 0 (every row the same) decays it by 0.9.
	flat := crossScores{tok: [][]float64{{-1, -2}, {-1, -2}}, seq: [][]float64{{-1, -2}, {-1, -2}}, col: []int{0, 1}, sig: []int{0, 1}}
	m = collapseStats(flat, &ema)
	if got, want := m[metrics.CollapseStdEMA], 0.9*0.359891; math.Abs(got-want) > 1e-6 {
		t.Errorf("EMA std = %v, want %v", got, want)
	}
	if m[metrics.CollapseStd] != 0 {
		t.Errorf("std = %v, want 0", m[metrics.CollapseStd])
	}

	// One prompt: nothing to retrieve, no metrics (as RAGEN-2).
	if m := collapseStats(crossScores{tok: [][]float64{{-1}}, seq: [][]float64{{-1}}, col: []int{0}, sig: []int{0}}, &ema); m != nil {
		t.Errorf("one prompt: %v, want none", m)
	}
}

// Columns holding the same prompt count as correct, and raise the chance
// level: three columns, the first two the same prompt.
func TestCollapseRetrievalSameprompt(t *testing.T) {
	l := [][]float64{{-2, -1, -3}, {-1, -2, -3}, {-1, -3, -2}}
	s := crossScores{tok: l, seq: l, col: []int{0, 1, 2}, sig: []int{0, 0, 1}}
	m := collapseStats(s, &collapseEMAs{})
	// argmax (1, 0, 0): rows 0 and 1 are right by signature, row 2 wrong.
	// chance = mean(2/3, 2/3, 1/3) = 5/9; @2: row 2's top 2 is (0, 2): right.
	for k, v := range map[string]float64{
		metrics.CollapseRetrieval:  2.0 / 3,
		metrics.CollapseChance:     5.0 / 9,
		metrics.CollapseRetrieval2: 1,
		metrics.CollapseChance2:    1, // min(1, 2·5/9)
		metrics.CollapseMIUpper:    math.Log(3),
	} {
		if math.Abs(m[k]-v) > 1e-12 {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
}

func TestFirstTurnSplitsPromptAndReasoning(t *testing.T) {
	T, F := true, false
	const th, fm = rollout.SpanThink, rollout.SpanFormat
	tr := &rollout.Trajectory{
		Tokens:  []int{10, 11, 12, 20, 21, 22, 23, 30, 40, 41},
		Agent:   []bool{F, F, F, T, T, T, T, F, T, T},
		TurnEnd: []bool{F, F, F, F, F, F, T, F, F, T},
		Span:    []rollout.Span{0, 0, 0, th, th, fm, fm, 0, th, fm},
		Turns:   []rollout.Turn{{Response: " a b</think><answer>"}, {Response: "c</think>"}},
	}
	x, z, ok := firstTurn(tr)
	if !ok || !slices.Equal(x, []int{10, 11, 12}) || !slices.Equal(z, []int{20, 21}) {
		t.Errorf("first turn: x %v z %v ok %v", x, z, ok)
	}
	tr.Turns[0].Response = " a b<answer>" // never closed: no reasoning (RAGEN-2's regex)
	if _, z, ok := firstTurn(tr); !ok || len(z) != 0 {
		t.Errorf("unclosed think: z %v ok %v", z, ok)
	}
	tr.Turns[0].Response = "</think><answer>"
	tr.Span[3], tr.Span[4] = fm, fm // the response opens with </think>: no reasoning
	if _, z, ok := firstTurn(tr); !ok || len(z) != 0 {
		t.Errorf("no reasoning: z %v ok %v", z, ok)
	}
	if _, _, ok := firstTurn(&rollout.Trajectory{Tokens: []int{1}, Agent: []bool{F}, TurnEnd: []bool{F}, Span: []rollout.Span{0}}); ok {
		t.Error("a trajectory without a sampled turn has a first turn")
	}
}

// Every sampled turn splits into its whole context and its reasoning.
func TestTurnPairsSplitEveryTurn(t *testing.T) {
	T, F := true, false
	const th, fm = rollout.SpanThink, rollout.SpanFormat
	tr := &rollout.Trajectory{
		Tokens:  []int{10, 11, 20, 21, 22, 30, 31, 40, 41, 42, 50, 60},
		Agent:   []bool{F, F, T, T, T, F, F, T, T, T, F, T},
		TurnEnd: []bool{F, F, F, F, T, F, F, F, F, T, F, T},
		Span:    []rollout.Span{0, 0, th, th, fm, 0, 0, th, fm, fm, 0, fm},
		Turns:   []rollout.Turn{{Response: "a b</think>"}, {Response: "c</think><answer>"}, {Response: "<answer>"}},
	}
	xs, zs := turnPairs(tr)
	wantX := [][]int{{10, 11}, {10, 11, 20, 21, 22, 30, 31}, {10, 11, 20, 21, 22, 30, 31, 40, 41, 42, 50}}
	wantZ := [][]int{{20, 21}, {40}, nil}
	if !reflect.DeepEqual(xs, wantX) || !reflect.DeepEqual(zs, wantZ) {
		t.Errorf("turn pairs: x %v z %v", xs, zs)
	}
}

// Trajectory-uniform sampling: 64 draws (fewer pairs when the drawn
// trajectory has no reasoning), each a turn of its trajectory, the same
// for the same seed.
func TestTrajectorySample(t *testing.T) {
	counts := []int{3, 0, 1, 40, 30}
	a, b := trajectorySample(counts, 9), trajectorySample(counts, 9)
	if !reflect.DeepEqual(a, b) || len(a) > collapseSamples || len(a) < collapseSamples/2 {
		t.Fatalf("%d pairs: %v, %v", len(a), a, b)
	}
	per := make([]int, len(counts))
	for _, p := range a {
		if p[1] < 0 || p[1] >= counts[p[0]] {
			t.Errorf("pair %v out of range", p)
		}
		per[p[0]]++
	}
	// Uniform over trajectories, not turns: the one-turn trajectory is
	// drawn about as often as the 40-turn one.
	if per[1] != 0 || per[2] < 5 || per[3] > 25 {
		t.Errorf("draws per trajectory %v", per)
	}
	if got := trajectorySample([]int{1, 2}, 1); len(got) != 3 {
		t.Errorf("3 pairs in all: %d draws", len(got))
	}
}

func TestCollapseSampleOwnStream(t *testing.T) {
	if got := collapseSample(5, 1); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Errorf("fewer than 64: %v, want all", got)
	}
	a, b := collapseSample(200, 7), collapseSample(200, 7)
	if len(a) != collapseSamples || !slices.Equal(a, b) || !slices.IsSorted(a) || len(slices.Compact(slices.Clone(a))) != collapseSamples {
		t.Errorf("64 of 200: %v, %v", a, b)
	}
}

// The metrics appear on step 1 and every CollapseEvery steps, and turning
// them on changes no other number of the run: every other metric and the
// final weights are bit-identical.
func TestCollapseMetricsChangeNothingElse(t *testing.T) {
	c := tinyConfig(t)
	c.Steps, c.ValEvery = 4, 2
	off := run(t, c)
	c.CollapseEvery, c.CollapseTrajectory = 2, true
	on := run(t, c)

	for _, s := range on.History.Steps[1:] {
		_, has := s.Values[metrics.CollapseNumTotal]
		_, timed := s.Values[metrics.TimeCollapse]
		if due := s.Step == 1 || s.Step%2 == 0; has != due || timed != due {
			t.Errorf("step %d: collapse metrics %v, timing %v, want %v", s.Step, has, timed, due)
		}
		if !has {
			continue
		}
		if v, ok := s.Values[metrics.CollapseValidThinking]; !ok || v < 0 || v > 1 {
			t.Errorf("step %d: valid thinking rate %v (%v)", s.Step, v, ok)
		}
		if mi, ok := s.Values[metrics.CollapseTrajPrefix+"mi_estimate"]; ok {
			if ub := s.Values[metrics.CollapseTrajPrefix+"mi_upper_bound"]; !(mi <= ub+1e-9) {
				t.Errorf("step %d: trajectory MI %v above log N %v", s.Step, mi, ub)
			}
			t.Logf("step %d: trajectory-sampled MI %.4f ≤ %.4f, retrieval %.3f (chance %.3f)", s.Step, mi,
				s.Values[metrics.CollapseTrajPrefix+"mi_upper_bound"], s.Values[metrics.CollapseTrajPrefix+"retrieval_accuracy"],
				s.Values[metrics.CollapseTrajPrefix+"retrieval_chance_level"])
		} else {
			t.Errorf("step %d: no trajectory-sampled MI", s.Step)
		}
		n := s.Values[metrics.CollapseNumTotal]
		if n != float64(c.EnvGroups*c.GroupSize) || s.Values[metrics.CollapseNumValid] > n {
			t.Errorf("step %d: first turns %v, valid %v", s.Step, n, s.Values[metrics.CollapseNumValid])
		}
		if mi, ok := s.Values[metrics.CollapseMI]; ok {
			ub := s.Values[metrics.CollapseMIUpper]
			if !(mi <= ub+1e-9) || math.IsNaN(s.Values[metrics.CollapseZ]) {
				t.Errorf("step %d: MI %v above log N %v, z %v", s.Step, mi, ub, s.Values[metrics.CollapseZ])
			}
		}
		t.Logf("step %d: %d valid of %v, MI %.4f ≤ %.4f, retrieval %.3f (chance %.3f), %.3fs of %.3fs", s.Step,
			int(s.Values[metrics.CollapseNumValid]), n, s.Values[metrics.CollapseMI], s.Values[metrics.CollapseMIUpper],
			s.Values[metrics.CollapseRetrieval], s.Values[metrics.CollapseChance],
			s.Values[metrics.TimeCollapse], s.Values[metrics.TimeStep])
	}

	others := deterministic(on.History)
	for _, s := range others {
		for k := range s.Values {
			if strings.HasPrefix(k, "collapse") {
				delete(s.Values, k)
			}
		}
	}
	if !reflect.DeepEqual(deterministic(off.History), others) {
		t.Error("turning the collapse metrics on changed other metrics")
	}
	if !slices.Equal(policyOf(t, off).Params.Data, policyOf(t, on).Params.Data) {
		t.Error("turning the collapse metrics on changed the policy")
	}
}

// Each cell of the packed, chunked cross-scoring is log p(z_i | x_j) of
// x_j ++ z_i scored alone.
func TestCrossScoreMatchesSingleForwards(t *testing.T) {
	c := tinyConfig(t)
	c.MicroBatchTokens = 300 // several chunks
	tr, err := New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	trajs, err := tr.play(context.Background(), tr.trainTasks(1), 1)
	if err != nil {
		t.Fatal(err)
	}
	var xs, zs [][]int
	var groups, pick []int
	for _, traj := range trajs {
		if x, z, ok := firstTurn(traj); ok && len(z) > 0 {
			pick = append(pick, len(xs))
			xs, zs, groups = append(xs, x), append(zs, z), append(groups, traj.Group)
		}
	}
	s, err := tr.crossScore(xs, zs, groups, pick)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.sig) < 2 {
		t.Skipf("%d prompts among the valid first turns", len(s.sig))
	}
	prompt := map[int][]int{} // column → x_j: the first member's prompt
	for r, i := range pick {
		if _, ok := prompt[s.col[r]]; !ok {
			prompt[s.col[r]] = xs[i]
		}
	}
	for r, i := range pick {
		for j := range s.sig {
			seq := append(slices.Clone(prompt[j]), zs[i]...)
			out, err := tr.policy.Forward(seq, []int{len(seq)}, model.Want{LM: true})
			if err != nil {
				t.Fatal(err)
			}
			var sum float64
			for _, lp := range out.LogProb[len(prompt[j]):] {
				sum += float64(lp)
			}
			if math.Abs(s.seq[r][j]-sum) > 1e-3*max(1, math.Abs(sum)) || math.Abs(s.tok[r][j]-sum/float64(len(zs[i]))) > 1e-3 {
				t.Fatalf("ℓ[%d][%d] = %v (%v per token), scored alone %v", r, j, s.seq[r][j], s.tok[r][j], sum)
			}
		}
	}
	t.Logf("%d pairs × %d prompts", len(pick), len(s.sig))
}
