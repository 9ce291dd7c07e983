package metrics

// Metric names, namespaced after veRL/RAGEN. Every metric the engine reports
// is named here and nowhere else.
const (
	// rollout: rewards before filtering
	RewardMean       = "rollout/reward_mean"                // mean trajectory reward
	RewardStd        = "rollout/reward_std"                 // std of trajectory reward over the batch
	InGroupStd       = "rollout/in_group_reward_std"        // mean over groups of in-group reward std
	InGroupMean      = "rollout/in_group_reward_mean"       // mean over groups of in-group reward mean
	InGroupMax       = "rollout/in_group_reward_max"        // mean over groups of in-group reward max
	FilterKeepRatio  = "rollout/filter_kept_ratio"          // fraction of groups kept by the filter
	ChosenInGroupStd = "rollout/chosen_in_group_reward_std" // in-group std over kept groups
	ZeroStdGroups    = "rollout/zero_std_groups"            // fraction of groups whose rewards are all equal
	// The statistic RAGEN v2's filter selects by (algo.Config.FilterMetric),
	// reported when a v2 strategy, metric or include_zero is set.
	FilterScoreMean       = "rollout/filter_score_mean"        // mean over groups of the statistic
	ChosenFilterScoreMean = "rollout/chosen_filter_score_mean" // mean over kept groups
	FilterZeroCount       = "rollout/filter_zero_count"        // groups whose statistic is 0 (|s| ≤ 1e-10)
	// On a step whose filter kept nothing (no update): 1, and how many
	// such steps ran in a row (train.Config.FilterEmptyStop).
	EmptyAfterFilter    = "rollout/empty_after_filter"
	EmptyAfterFilterRun = "rollout/consecutive_empty_after_filter_steps"

	// env: behaviour of the agent in the environment
	SuccessRate       = "env/success_rate"        // training rollouts
	ValSuccessRate    = "val/success_rate"        // held-out seeds
	ValRewardMean     = "val/reward_mean"         // held-out seeds
	FormatValidRate   = "env/format_valid_rate"   // turns whose answer parsed
	InvalidActionRate = "env/invalid_action_rate" // actions not in the action set
	TurnsMean         = "env/turns_mean"          // turns per trajectory
	ActionsMean       = "env/num_actions"         // executed actions per trajectory
	PassAtGroup       = "env/pass_at_group"       // groups where some member succeeded

	// response: what the policy wrote
	ResponseTokens = "response/tokens_mean"        // agent tokens per trajectory
	TurnTokens     = "response/turn_tokens_mean"   // agent tokens per turn
	ClosedRate     = "response/closed_rate"        // turns that ended with </answer>, not the token limit
	ThinkTokens    = "response/think_tokens_mean"  // tokens inside <think> per turn
	AnswerTokens   = "response/answer_tokens_mean" // tokens inside <answer> per turn
	// DistinctRate is the share of distinct texts among the step's
	// first-turn responses: near 1 when every rollout writes its own
	// answer, falling toward 1/groups when each group's members write the
	// same one, and below when one template answers every state (the
	// echo trap's "one response for all prompts").
	DistinctRate = "response/distinct_rate"

	// actor: the policy update
	Entropy       = "actor/entropy"   // mean token entropy of the rollout policy
	GradNorm      = "actor/grad_norm" // before clipping
	PolicyLoss    = "actor/pg_loss"
	ClipFrac      = "actor/pg_clipfrac"       // veRL: tokens where either PPO bound clipped the objective
	ClipFracLower = "actor/pg_clipfrac_lower" // veRL: tokens bound by the dual clip (negative advantages)
	ClipFracHigh  = "actor/clipfrac_high"     // A > 0 and ratio > 1+clip_high (the clip-higher bound)
	ClipFracLow   = "actor/clipfrac_low"      // A < 0 and ratio < 1-clip_low
	ApproxKL      = "actor/ppo_kl"            // to the old (rollout) policy
	RefKL         = "actor/kl_loss"           // to the frozen reference policy
	LearningRate  = "actor/lr"
	// LossMaskFrac is the fraction of agent tokens the policy loss covers
	// under a selective loss mask (train.Config.LossMask; absent with all).
	LossMaskFrac = "actor/loss_mask_frac"

	// critic
	ValueLoss      = "critic/vf_loss"
	CriticGradNorm = "critic/grad_norm"
	ExplainedVar   = "critic/vf_explained_var"
	ValueClipFrac  = "critic/vf_clipfrac"

	// timing and throughput
	TimeRollout   = "timing_s/rollout"
	TimeTrain     = "timing_s/train"
	TimeWarmStart = "timing_s/warm_start"
	TimeStep      = "timing_s/step"
	TokensPerSec  = "perf/tokens_per_s"
	// PeakRSS is the process's peak resident memory so far in GB (10⁹
	// bytes), from getrusage; absent where the system does not report it.
	PeakRSS = "perf/max_rss_gb"
)
