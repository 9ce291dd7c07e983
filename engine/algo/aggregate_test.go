package algo

import "testing"

// Three sequences of unequal length: seq 0 has agent tokens with losses
// 1, 2, 3 (and an observation token with 99), seq 1 one agent token with
// loss 4, seq 2 no agent token at all (counted in no mean). N = 4, B = 2.
//
//	token-mean               (1+2+3+4)/4           = 2.5
//	seq-mean-token-sum       (6 + 4)/2             = 5
//	seq-mean-token-mean      (6/3 + 4/1)/2         = 3
//	seq-mean-token-sum-norm  (6 + 4)/(2·L), L = 4 (longest) → 1.25; L = 10 → 0.5
func TestAggregationModes(t *testing.T) {
	mask := [][]bool{{true, true, true, false}, {false, true}, {false, false, false}}
	loss := [][]float64{{1, 2, 3, 99}, {99, 4}, {7, 7, 7}}
	cases := []struct {
		mode  string
		L     int
		want  float64
		wSeq0 float64 // weight of each agent token of seq 0
		wSeq1 float64
	}{
		{AggTokenMean, 0, 2.5, 0.25, 0.25},
		{AggSeqMeanTokenSum, 0, 5, 0.5, 0.5},
		{AggSeqMeanTokenMean, 0, 3, 1.0 / 6, 0.5},
		{AggSeqMeanTokenSumNrm, 0, 1.25, 0.125, 0.125},
		{AggSeqMeanTokenSumNrm, 10, 0.5, 0.05, 0.05},
	}
	for _, c := range cases {
		w, err := AggWeights(c.mode, mask, c.L)
		if err != nil {
			t.Fatal(err)
		}
		near(t, c.mode, Aggregate(loss, w), c.want, 1e-15)
		nearSlice(t, c.mode+" w0", w[0], []float64{c.wSeq0, c.wSeq0, c.wSeq0, 0}, 1e-15)
		nearSlice(t, c.mode+" w1", w[1], []float64{0, c.wSeq1}, 1e-15)
		nearSlice(t, c.mode+" w2", w[2], []float64{0, 0, 0}, 0)
	}
	if _, err := AggWeights(AggTokenMean, [][]bool{{false}}, 0); err == nil || err.Error() != "loss_agg: the batch has no agent tokens" {
		t.Errorf("empty batch: err = %v", err)
	}
	if _, err := AggWeights("sum", mask, 0); err == nil || err.Error() != `loss_agg: unknown mode "sum"` {
		t.Errorf("unknown mode: err = %v", err)
	}
}
