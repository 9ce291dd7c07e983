package algo

import (
	"fmt"
	"math"
)

// Advantage estimators (Config.AdvEstimator).
const (
	EstGAE                 = "gae"                   // GAE with a critic (veRL gae; RAGEN default)
	EstBiLevelGAE          = "bi_level_gae"          // RAGEN/VAGEN turn-level + token-level GAE
	EstGRPO                = "grpo"                  // (R − mean_g) / (std_g + ε)
	EstDrGRPO              = "dr_grpo"               // R − mean_g (no std)
	EstRLOO                = "rloo"                  // R − mean of the other members of the group
	EstReinforce           = "reinforce"             // reward-to-go, optional batch-mean baseline
	EstReinforcePP         = "reinforce_pp"          // reward-to-go whitened over the batch
	EstReinforcePPBaseline = "reinforce_pp_baseline" // (R − mean_g) whitened over the batch
)

// Loss aggregation modes (Config.LossAgg), named as in veRL's agg_loss.
const (
	AggTokenMean          = "token-mean"
	AggSeqMeanTokenSum    = "seq-mean-token-sum"
	AggSeqMeanTokenMean   = "seq-mean-token-mean"
	AggSeqMeanTokenSumNrm = "seq-mean-token-sum-norm"
)

// Estimators and LossAggs list the values Config.Validate accepts for
// AdvEstimator and LossAgg.
var (
	Estimators = []string{EstGAE, EstBiLevelGAE, EstGRPO, EstDrGRPO, EstRLOO, EstReinforce, EstReinforcePP, EstReinforcePPBaseline}
	LossAggs   = []string{AggTokenMean, AggSeqMeanTokenSum, AggSeqMeanTokenMean, AggSeqMeanTokenSumNrm}
)

// KL placements (Config.KLPlacement) and estimators (Config.KLEstimator).
const (
	KLNone   = "none"   // no KL to the reference policy
	KLReward = "reward" // r_t ← r_t − β·KL_t(old, ref) on agent tokens, before advantages
	KLLoss   = "loss"   // L ← L + β·agg(KL_t(new, ref))

	KLk1  = "k1"  // δ                      (veRL "kl")
	KLk2  = "k2"  // ½δ²                    (veRL "mse")
	KLk3  = "k3"  // e^{−δ} + δ − 1         (veRL "low_var_kl")
	KLAbs = "abs" // |δ|                    (veRL "abs")
)

// Filter metrics (Config.FilterMetric): the per-group score the StarPO-S
// filter ranks by, highest kept first.
const (
	FilterStd     = "std"      // in-group reward std (RAGEN v1 rollout_filter_type=std)
	FilterStdRev  = "std_rev"  // −std: keep the LOWEST-variance groups (RAGEN std_rev)
	FilterMaxMean = "max_mean" // max − mean (the RAGEN docstring's metric; its code uses std)
	FilterRange   = "range"    // max − min

	// RAGEN v2's metrics (rollout_filter_metric), under its names.
	FilterRewardVariance  = "reward_variance"  // the std of the returns, as std (RAGEN's default; it is a std, not a variance)
	FilterReward          = "reward"           // mean return
	FilterRewardSum       = "reward_sum"       // summed returns
	FilterEntropy         = "entropy"          // mean over members of the mean token entropy on agent tokens
	FilterEntropyVariance = "entropy_variance" // unbiased std over members of that entropy
	FilterLength          = "length"           // mean agent tokens per member
)

// Filter strategies (Config.FilterStrategy): how the groups are selected
// by their statistic (see selectGroups for the formulas).
const (
	FilterRatioTop = "ratio"     // top int(filter_ratio · candidates), at least 1 (StarPO-S, RAGEN v1; "" too)
	FilterTopP     = "top_p"     // nucleus over the statistic, linear or softmax (RAGEN v2 default)
	FilterTopK     = "top_k"     // top max(1, int(filter_value · groups))
	FilterTopKAbs  = "top_k_abs" // top max(1, int(filter_value))
	FilterMinP     = "min_p"     // the statistic ≥ filter_value · max

	TopPLinear  = "linear"  // cumulative score reaches filter_value of the total (RAGEN top_p_prob_mode)
	TopPSoftmax = "softmax" // cumulative softmax probability reaches filter_value

	// DefaultSelectionEps is the ε of linear top-p when
	// Config.FilterSelectionEps is nil (RAGEN rollout_filter_selection_eps).
	DefaultSelectionEps = 0.01
)

// FilterMetrics and FilterStrategies list the values Config.Validate
// accepts for FilterMetric and FilterStrategy.
var (
	FilterMetrics    = []string{FilterStd, FilterStdRev, FilterMaxMean, FilterRange, FilterRewardVariance, FilterReward, FilterRewardSum, FilterEntropy, FilterEntropyVariance, FilterLength}
	FilterStrategies = []string{"", FilterRatioTop, FilterTopP, FilterTopK, FilterTopKAbs, FilterMinP}
)

// Reward placements (Config.RewardPlacement, used by PlaceRewards); the
// algorithms read the placed rewards from Trajectory.Reward.
const (
	RewardLast = "last" // trajectory reward at the last agent token (RAGEN use_turn_scores=False)
	RewardTurn = "turn" // each turn's reward at that turn's last agent token (use_turn_scores=True)
)

// Config is every knob of the StarPO algorithm math, flat, with its default
// (the StarPO-S values, RAGEN v1 base.yaml) and its source. JSON keys are the
// names used in error messages and run directories.
type Config struct {
	// Advantages.

	// gae | bi_level_gae | grpo | dr_grpo | rloo | reinforce | reinforce_pp | reinforce_pp_baseline (gae; RAGEN algorithm.adv_estimator)
	AdvEstimator string `json:"adv_estimator" flag:"estimator" help:"advantage estimator: gae | bi_level_gae | grpo | dr_grpo | rloo | reinforce | reinforce_pp | reinforce_pp_baseline"`
	// token discount γ in [0, 1] (1.0; veRL algorithm.gamma)
	Gamma float64 `json:"gamma" flag:"gamma" help:"token discount γ"`
	// GAE λ in [0, 1] (1.0; veRL algorithm.lam)
	Lam float64 `json:"lam" flag:"lam" help:"GAE λ"`
	// turn discount γ_H of bi-level GAE, in [0, 1] (0.95; RAGEN algorithm.high_level_gamma)
	HighLevelGamma float64 `json:"high_level_gamma" flag:"high-level-gamma" help:"turn discount γ_H of bi-level GAE"`
	// ε in (R − mean)/(std + ε), ≥ 0 (1e-6; veRL grpo epsilon)
	AdvEps float64 `json:"adv_eps" flag:"adv-eps" help:"ε in (R − mean)/(std + ε)"`
	// GRPO std with Bessel's correction, n−1 (true; torch.std default in veRL)
	StdUnbiased bool `json:"std_unbiased" flag:"std-unbiased" help:"GRPO std with Bessel's correction (n−1)"`
	// whiten gae / bi_level_gae advantages over the batch's agent tokens (true; veRL masked_whiten)
	NormAdv bool `json:"norm_adv" flag:"norm-adv" help:"whiten gae / bi_level_gae advantages over the batch"`
	// reinforce only: subtract the batch-mean trajectory return (false)
	BaselineMean bool `json:"baseline_mean" flag:"baseline-mean" help:"reinforce: subtract the batch-mean return"`

	// Rewards.

	// last | turn (last; RAGEN agent_proxy.use_turn_scores=False)
	RewardPlacement string `json:"reward_placement" flag:"reward-placement" help:"where rewards go: last (trajectory reward at the last token) | turn (each turn's at its last token)"`

	// Policy loss (PPO clip, veRL compute_policy_loss_vanilla).

	// ε_low: ratio floor 1 − ε_low, in (0, 1) (0.2; veRL clip_ratio_low)
	ClipLow float64 `json:"clip_low" flag:"clip-low" help:"PPO ratio floor 1 − ε_low"`
	// ε_high: ratio ceiling 1 + ε_high, > 0 (0.28 clip-higher; veRL clip_ratio_high)
	ClipHigh float64 `json:"clip_high" flag:"clip-high" help:"PPO ratio ceiling 1 + ε_high (clip-higher)"`
	// dual-clip constant c > 1 bounding the loss −A·c for A < 0; 0 turns it off (3.0; veRL clip_ratio_c)
	ClipC float64 `json:"clip_c" flag:"clip-c" help:"dual-clip constant c > 1 (0: off)"`

	// Aggregation.

	// token-mean | seq-mean-token-sum | seq-mean-token-mean | seq-mean-token-sum-norm (token-mean; veRL loss_agg_mode)
	LossAgg string `json:"loss_agg" flag:"loss-agg" help:"loss aggregation: token-mean | seq-mean-token-sum | seq-mean-token-mean | seq-mean-token-sum-norm"`
	// L of seq-mean-token-sum-norm, ≥ 0; 0 = the longest sequence given (0; veRL loss_scale_factor)
	LossScaleLen int `json:"loss_scale_len" flag:"loss-scale-len" help:"L of seq-mean-token-sum-norm (0: the longest sequence)"`

	// KL to the frozen reference policy.

	// none | reward | loss (none; StarPO-S drops KL)
	KLPlacement string `json:"kl_placement" flag:"kl-placement" help:"KL to the reference policy: none | reward | loss"`
	// k1 | k2 | k3 | abs (k1; veRL kl_penalty "kl")
	KLEstimator string `json:"kl_estimator" flag:"kl-estimator" help:"KL estimator: k1 | k2 | k3 | abs"`
	// β ≥ 0 (0; RAGEN kl_ctrl.kl_coef, vanilla StarPO 0.001)
	KLCoef float64 `json:"kl_coef" flag:"kl-coef" help:"KL coefficient β"`

	// Entropy bonus and critic.

	// c ≥ 0 in L ← L − c·agg(H) (0.001; RAGEN actor.entropy_coeff)
	EntropyCoef float64 `json:"entropy_coef" flag:"entropy-coef" help:"entropy bonus coefficient"`
	// ε_v ≥ 0 clipping V to V_old ± ε_v; 0 turns clipping off (0.5; veRL critic.cliprange_value)
	ValueClip float64 `json:"value_clip" flag:"value-clip" help:"critic value clipping ε_v (0: off)"`

	// StarPO-S group filter.

	// fraction of groups kept, in (0, 1]; 1 = no filter (0.25; RAGEN rollout_filter_ratio)
	FilterRatio float64 `json:"filter_ratio" flag:"filter" help:"keep this fraction of groups by the filter metric (1: no filter)"`
	// std | std_rev | max_mean | range (std; RAGEN rollout_filter_type)
	FilterMetric string `json:"filter_metric" flag:"filter-metric" help:"group filter score: std | std_rev | max_mean | range"`
	// DAPO: drop groups whose rewards are all equal before ranking (false)
	FilterDropZeroStd bool `json:"filter_drop_zero_std" flag:"filter-drop-zero-std" help:"drop groups whose rewards are all equal before ranking (DAPO)"`
	// FilterAbove, when set, drops the groups scoring at or below it before
	// ranking (a threshold filter; with FilterRatio 1 it alone decides) (nil).
	FilterAbove *float64 `json:"filter_above,omitempty" flag:"filter-above" help:"drop groups scoring at or below this before ranking (unset: no threshold)"`

	// RAGEN v2's SNR-aware selection (rollout_filter_*). The zero values
	// keep the StarPO-S filter above, and leave the run's configuration
	// (and the DSL's run cache key) as it was.
	FilterStrategy string  `json:"filter_strategy,omitempty" flag:"filter-strategy" help:"RAGEN v2 group selection: ratio (filter) | top_p | top_k | top_k_abs | min_p"`     // "" or ratio (filter_ratio) | top_p | top_k | top_k_abs | min_p ("" = ratio; RAGEN rollout_filter_strategy, top_p in v2)
	FilterValue    float64 `json:"filter_value,omitempty" flag:"filter-value" help:"the selection strategy's value (top_p mass, top_k or min_p fraction, top_k_abs groups)"` // the strategy's value: top_p mass, top_k fraction, min_p fraction in (0, 1]; top_k_abs groups ≥ 1 (0, needed by those strategies; RAGEN rollout_filter_value, 0.9 recommended for top_p)
	FilterTopPMode string  `json:"filter_top_p_mode,omitempty" flag:"filter-top-p-mode" help:"top_p over the group statistic: linear | softmax"`                             // top_p only: linear | softmax ("" = linear; RAGEN rollout_filter_top_p_prob_mode)
	// FilterSelectionEps is the ε of linear top-p, ≥ 0 (nil = 0.01; RAGEN rollout_filter_selection_eps).
	FilterSelectionEps *float64 `json:"filter_selection_eps,omitempty" flag:"filter-eps" help:"ε of linear top-p (unset: 0.01)"`
	FilterSmallest     bool     `json:"filter_smallest,omitempty" flag:"filter-smallest" help:"select the lowest group statistic first"`                                              // select the lowest statistic first (false; RAGEN rollout_filter_type smallest)
	FilterExcludeZero  bool     `json:"filter_exclude_zero,omitempty" flag:"filter-exclude-zero" help:"drop groups whose statistic is 0 before selecting (RAGEN include_zero=False)"` // drop groups whose statistic is 0 (|s| ≤ 1e-10) before selecting (false; RAGEN include_zero = !this, docs recommend include_zero False)
}

// selectionEps is FilterSelectionEps or its default.
func (c *Config) selectionEps() float64 {
	if c.FilterSelectionEps == nil {
		return DefaultSelectionEps
	}
	return *c.FilterSelectionEps
}

// FilterNeedsEntropy reports whether the filter's metric reads the
// trajectories' token entropies (an extra policy pass before filtering).
func (c *Config) FilterNeedsEntropy() bool {
	return c.FilterMetric == FilterEntropy || c.FilterMetric == FilterEntropyVariance
}

// Default returns the StarPO-S configuration (RAGEN v1 base.yaml).
func Default() Config { return StarPOS() }

// StarPOS is StarPO-S as RAGEN v1 runs it (base.yaml, paper §4):
//
//	adv_estimator gae, γ 1.0, λ 1.0 (critic; paper: "critic-based PPO is more stable")
//	norm_adv true (veRL masked_whiten), adv_eps 1e-6, std_unbiased true
//	clip_low 0.2, clip_high 0.28 (clip-higher, as DAPO), clip_c 3.0 (veRL dual clip on by default)
//	loss_agg token-mean (veRL default)
//	kl_placement none, kl_coef 0 (paper: "KL removal")
//	entropy_coef 0.001 (paper, base.yaml)
//	value_clip 0.5 (veRL critic.cliprange_value)
//	filter_ratio 0.25 by in-group std (paper: "25% is the default")
//	reward_placement last (use_turn_scores False)
func StarPOS() Config {
	return Config{
		AdvEstimator:    EstGAE,
		Gamma:           1.0,
		Lam:             1.0,
		HighLevelGamma:  0.95,
		AdvEps:          1e-6,
		StdUnbiased:     true,
		NormAdv:         true,
		RewardPlacement: RewardLast,
		ClipLow:         0.2,
		ClipHigh:        0.28,
		ClipC:           3.0,
		LossAgg:         AggTokenMean,
		KLPlacement:     KLNone,
		KLEstimator:     KLk1,
		KLCoef:          0,
		EntropyCoef:     0.001,
		ValueClip:       0.5,
		FilterRatio:     0.25,
		FilterMetric:    FilterStd,
	}
}

// StarPO is vanilla StarPO as the paper describes it (RAGEN train_all.sh
// USE_BASE with USE_PPO): StarPO-S without its three changes.
//
//	adv_estimator gae (set "grpo" for the paper's GRPO variant)
//	clip_low 0.2, clip_high 0.2 (symmetric clipping)
//	kl_placement reward, kl_estimator k1, kl_coef 0.001 (paper: "KL coef 0.001";
//	  veRL kl_ctrl.kl_coef with kl_penalty "kl" puts it in the reward. Note that
//	  RAGEN's script leaves use_kl_in_reward and use_kl_loss False for PPO, so
//	  its code in fact trains without KL; we follow the paper.)
//	filter_ratio 1.0 (no filter)
//	everything else as StarPOS (entropy 0.001, γ = λ = 1, token-mean, clip_c 3.0).
func StarPO() Config {
	c := StarPOS()
	c.ClipHigh = 0.2
	c.KLPlacement = KLReward
	c.KLEstimator = KLk1
	c.KLCoef = 0.001
	c.FilterRatio = 1.0
	return c
}

// Validate reports the first invalid field by its JSON key, with the value.
func (c *Config) Validate() error {
	oneOf := func(key, v string, allowed ...string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("%s: must be one of %q (got %q)", key, allowed, v)
	}
	unit := func(key string, v float64) error { // closed [0, 1]
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("%s: must be in [0, 1] (got %v)", key, v)
		}
		return nil
	}
	nonneg := func(key string, v float64) error {
		if !(v >= 0) || math.IsInf(v, 1) {
			return fmt.Errorf("%s: must be a finite number ≥ 0 (got %v)", key, v)
		}
		return nil
	}
	checks := []func() error{
		func() error {
			return oneOf("adv_estimator", c.AdvEstimator, Estimators...)
		},
		func() error { return unit("gamma", c.Gamma) },
		func() error { return unit("lam", c.Lam) },
		func() error { return unit("high_level_gamma", c.HighLevelGamma) },
		func() error { return nonneg("adv_eps", c.AdvEps) },
		func() error { return oneOf("reward_placement", c.RewardPlacement, RewardLast, RewardTurn) },
		func() error {
			if !(c.ClipLow > 0 && c.ClipLow < 1) {
				return fmt.Errorf("clip_low: must be in (0, 1) (got %v)", c.ClipLow)
			}
			return nil
		},
		func() error {
			if !(c.ClipHigh > 0) || math.IsInf(c.ClipHigh, 1) {
				return fmt.Errorf("clip_high: must be a finite number > 0 (got %v)", c.ClipHigh)
			}
			return nil
		},
		func() error {
			if c.ClipC != 0 && !(c.ClipC > 1) || math.IsInf(c.ClipC, 1) {
				return fmt.Errorf("clip_c: must be 0 (dual clip off) or a finite number > 1 (got %v)", c.ClipC)
			}
			return nil
		},
		func() error {
			return oneOf("loss_agg", c.LossAgg, LossAggs...)
		},
		func() error {
			if c.LossScaleLen < 0 {
				return fmt.Errorf("loss_scale_len: must be ≥ 0 (got %d)", c.LossScaleLen)
			}
			return nil
		},
		func() error { return oneOf("kl_placement", c.KLPlacement, KLNone, KLReward, KLLoss) },
		func() error { return oneOf("kl_estimator", c.KLEstimator, KLk1, KLk2, KLk3, KLAbs) },
		func() error { return nonneg("kl_coef", c.KLCoef) },
		func() error { return nonneg("entropy_coef", c.EntropyCoef) },
		func() error { return nonneg("value_clip", c.ValueClip) },
		func() error {
			if !(c.FilterRatio > 0 && c.FilterRatio <= 1) {
				return fmt.Errorf("filter_ratio: must be in (0, 1] (got %v)", c.FilterRatio)
			}
			return nil
		},
		func() error {
			if c.FilterAbove != nil && math.IsNaN(*c.FilterAbove) {
				return fmt.Errorf("filter_above: must be a number (got NaN)")
			}
			return nil
		},
		func() error {
			return oneOf("filter_metric", c.FilterMetric, FilterMetrics...)
		},
		func() error { return oneOf("filter_strategy", c.FilterStrategy, FilterStrategies...) },
		func() error {
			switch c.FilterStrategy {
			case FilterTopP, FilterTopK, FilterMinP:
				if !(c.FilterValue > 0 && c.FilterValue <= 1) {
					return fmt.Errorf("filter_value: must be in (0, 1] for filter_strategy %s (got %v)", c.FilterStrategy, c.FilterValue)
				}
			case FilterTopKAbs:
				if !(c.FilterValue >= 1) || math.IsInf(c.FilterValue, 1) {
					return fmt.Errorf("filter_value: must be a finite number ≥ 1 for filter_strategy %s (got %v)", c.FilterStrategy, c.FilterValue)
				}
			default:
				if c.FilterValue != 0 {
					return fmt.Errorf("filter_value: set only with filter_strategy top_p, top_k, top_k_abs or min_p; the ratio strategy reads filter_ratio (got %v)", c.FilterValue)
				}
			}
			return nil
		},
		func() error {
			if c.FilterTopPMode != "" && c.FilterStrategy != FilterTopP {
				return fmt.Errorf("filter_top_p_mode: set only with filter_strategy top_p (got %q with %q)", c.FilterTopPMode, c.FilterStrategy)
			}
			return oneOf("filter_top_p_mode", c.FilterTopPMode, "", TopPLinear, TopPSoftmax)
		},
		func() error {
			if c.FilterSelectionEps != nil {
				return nonneg("filter_selection_eps", *c.FilterSelectionEps)
			}
			return nil
		},
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}
