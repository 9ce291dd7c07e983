package algo

import (
	"math"
	"testing"
)

func TestPresets(t *testing.T) {
	s, v := StarPOS(), StarPO()
	for name, c := range map[string]Config{"StarPOS": s, "StarPO": v, "Default": Default()} {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// StarPO-S: filter 0.25, clip 0.2/0.28, no KL, critic, entropy 0.001.
	if s.FilterRatio != 0.25 || s.ClipLow != 0.2 || s.ClipHigh != 0.28 || s.KLPlacement != KLNone ||
		s.AdvEstimator != EstGAE || s.EntropyCoef != 0.001 {
		t.Errorf("StarPOS = %+v", s)
	}
	// Vanilla StarPO: no filter, KL on (k1, 0.001), symmetric clipping.
	if v.FilterRatio != 1 || v.ClipLow != 0.2 || v.ClipHigh != 0.2 || v.KLPlacement == KLNone ||
		v.KLEstimator != KLk1 || v.KLCoef != 0.001 {
		t.Errorf("StarPO = %+v", v)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.ClipLow = 1.5 }, "clip_low: must be in (0, 1) (got 1.5)"},
		{func(c *Config) { c.ClipHigh = 0 }, "clip_high: must be a finite number > 0 (got 0)"},
		{func(c *Config) { c.ClipC = 0.5 }, "clip_c: must be 0 (dual clip off) or a finite number > 1 (got 0.5)"},
		{func(c *Config) { c.Gamma = 1.1 }, "gamma: must be in [0, 1] (got 1.1)"},
		{func(c *Config) { c.Lam = math.NaN() }, "lam: must be in [0, 1] (got NaN)"},
		{func(c *Config) { c.AdvEstimator = "ppo" }, `adv_estimator: must be one of ["gae" "bi_level_gae" "grpo" "dr_grpo" "rloo" "reinforce" "reinforce_pp" "reinforce_pp_baseline"] (got "ppo")`},
		{func(c *Config) { c.LossAgg = "mean" }, `loss_agg: must be one of ["token-mean" "seq-mean-token-sum" "seq-mean-token-mean" "seq-mean-token-sum-norm"] (got "mean")`},
		{func(c *Config) { c.KLEstimator = "k4" }, `kl_estimator: must be one of ["k1" "k2" "k3" "abs"] (got "k4")`},
		{func(c *Config) { c.KLCoef = -1 }, "kl_coef: must be a finite number ≥ 0 (got -1)"},
		{func(c *Config) { c.FilterRatio = 0 }, "filter_ratio: must be in (0, 1] (got 0)"},
		{func(c *Config) { c.FilterMetric = "var" }, `filter_metric: must be one of ["std" "std_rev" "max_mean" "range" "reward_variance" "reward" "reward_sum" "entropy" "entropy_variance" "length"] (got "var")`},
		{func(c *Config) { c.LossScaleLen = -3 }, "loss_scale_len: must be ≥ 0 (got -3)"},
		{func(c *Config) { c.RewardPlacement = "first" }, `reward_placement: must be one of ["last" "turn"] (got "first")`},
	}
	for _, tc := range cases {
		c := StarPOS()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || err.Error() != tc.want {
			t.Errorf("err = %v\nwant  %s", err, tc.want)
		}
	}
	c := StarPOS()
	c.ClipC = 0 // dual clip off is valid
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}
