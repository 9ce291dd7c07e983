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

	// RAGEN-2's template-collapse diagnostics (train.Config.CollapseEvery),
	// named as RAGEN-2 names them. Up to 64 first turns are sampled; x_j is
	// the first prompt of group j up to and including <think>, z_i the
	// reasoning of pair i, ℓ_ij = log p(z_i | x_j) by teacher forcing,
	// per token (mean over z_i) or per sequence (sum, the _seq variants).
	// matched_i = ℓ_i,g(i) (its own prompt), marginal_i = logsumexp_j ℓ_ij − log N
	// over the N prompts. Template collapse: the reasoning stops depending
	// on the prompt, MI falls toward 0 and retrieval toward chance, while
	// the entropy may hold.
	CollapseNumTotal  = "collapse/first_turn_num_total" // trajectories with a first turn
	CollapseNumValid  = "collapse/first_turn_num_valid" // of them, with reasoning inside <think>
	CollapseValidRate = "collapse/first_turn_valid_rate"
	// CollapseValidThinking is the share of all sampled turns with
	// reasoning inside <think> (train.Config.CollapseTrajectory).
	CollapseValidThinking = "collapse/valid_thinking_rate"

	CollapseMI          = CollapsePrefix + "mi_estimate"            // mean(matched − marginal), per token
	CollapseMISeq       = CollapsePrefix + "mi_seq_estimate"        // per sequence
	CollapseMIUpper     = CollapsePrefix + "mi_upper_bound"         // log N
	CollapseMatched     = CollapsePrefix + "matched_log_prob_mean"  // mean matched, per token
	CollapseMarginal    = CollapsePrefix + "marginal_log_prob_mean" // mean marginal, per token
	CollapseCondEnt     = CollapsePrefix + "conditional_entropy_est"
	CollapseCondEntSeq  = CollapsePrefix + "conditional_entropy_seq_est" // H(Z|X) ≈ −mean matched
	CollapseReasEnt     = CollapsePrefix + "reasoning_entropy_est"
	CollapseReasEntSeq  = CollapsePrefix + "reasoning_entropy_seq_est" // H(Z) ≈ −mean marginal
	CollapseRetrieval   = CollapsePrefix + "retrieval_accuracy"        // argmax_j ℓ_ij is i's prompt
	CollapseChance      = CollapsePrefix + "retrieval_chance_level"    // mean share of columns with i's prompt
	CollapseAboveChance = CollapsePrefix + "retrieval_above_chance"
	CollapseStd         = CollapsePrefix + "marginal_std" // population std of marginal over pairs
	CollapseStdSeq      = CollapsePrefix + "marginal_std_seq"
	CollapseStdEMA      = CollapsePrefix + "marginal_std_ema" // EMA, decay 0.9, over the steps computed
	CollapseStdEMASeq   = CollapsePrefix + "marginal_std_ema_seq"
	CollapseZ           = CollapsePrefix + "mi_zscore" // mean((matched − marginal) / (std + 1e-3))
	CollapseZSeq        = CollapsePrefix + "mi_zscore_seq"
	CollapseZEMA        = CollapsePrefix + "mi_zscore_ema" // with the EMA std
	CollapseZEMASeq     = CollapsePrefix + "mi_zscore_ema_seq"
	// Retrieval in the top k of row i: accuracy, chance min(1, k·chance), above chance.
	CollapseRetrieval2   = CollapsePrefix + "retrieval_accuracy@2"
	CollapseRetrieval4   = CollapsePrefix + "retrieval_accuracy@4"
	CollapseRetrieval8   = CollapsePrefix + "retrieval_accuracy@8"
	CollapseChance2      = CollapsePrefix + "retrieval_chance_level@2"
	CollapseChance4      = CollapsePrefix + "retrieval_chance_level@4"
	CollapseChance8      = CollapsePrefix + "retrieval_chance_level@8"
	CollapseAboveChance2 = CollapsePrefix + "retrieval_above_chance@2"
	CollapseAboveChance4 = CollapsePrefix + "retrieval_above_chance@4"
	CollapseAboveChance8 = CollapsePrefix + "retrieval_above_chance@8"

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
	// TimeRolloutCPU and TimeTrainCPU are the CPU seconds this process
	// (rank 0 of a data-parallel run) spent in the rollout and the update,
	// every thread counted: the work, without the time spent waiting for a
	// core or for the other ranks. Absent where getrusage is missing.
	TimeRolloutCPU = "timing_s/rollout_cpu"
	TimeTrainCPU   = "timing_s/train_cpu"
	// TimeCollapse is the template-collapse metrics' computation, part of
	// timing_s/step (RAGEN-2's timing_s/collapse_metrics).
	TimeCollapse = "timing_s/collapse_metrics"
	// TimeGradReport is the gradient analysis (train.Config.GradientReportEvery),
	// part of timing_s/step.
	TimeGradReport = "timing_s/gradient_analysis"
	TokensPerSec   = "perf/tokens_per_s"
	// PeakRSS is the process's peak resident memory so far in GB (10⁹
	// bytes), from getrusage; absent where the system does not report it.
	PeakRSS = "perf/max_rss_gb"
)

// CollapsePrefix is RAGEN-2's prefix of the first-turn template-collapse
// metrics; CollapseTrajPrefix that of the same statistics over turns
// sampled from whole trajectories (train.Config.CollapseTrajectory):
// CollapseTrajPrefix + "mi_estimate", and so on for every Collapse* name
// under CollapsePrefix.
const (
	CollapsePrefix     = "collapse_first_turn_sample/"
	CollapseTrajPrefix = "collapse_trajectory_sample/"
)

// RAGEN's gradient analysis (ragen/trainer/gradient_reporter.py;
// train.Config.GradientReportEvery): the kept batch is split into buckets
// of groups by in-group reward std (algo.RewardStdBuckets: "all",
// "bucket_1" lowest … "bucket_N" highest), and each term of the actor loss
// is back-propagated alone on each bucket, without an optimizer step. A
// bucket's metric is GradPrefix + bucket + "/" + one of the names below,
// GradBucket(bucket, name).
const GradPrefix = "grad_norm/"

// The names within a bucket, RAGEN's.
const (
	GradSampleCount = "sample_count"    // trajectories in the bucket
	GradSamplePct   = "sample_pct"      // of the kept batch's trajectories
	GradGroupCount  = "group_rv_count"  // groups in the bucket
	GradStdMean     = "reward_std_mean" // mean over its groups of the in-group reward std
	GradStdMin      = "reward_std_min"
	GradStdMax      = "reward_std_max"

	// The L2 norm over the trainable parameters of the gradient of each
	// term of the actor loss (algo.ComputeActorLoss), aggregated over the
	// bucket as the update aggregates a minibatch: the PPO term (task), the
	// entropy bonus −c_H·agg(H) (entropy; only with entropy_coef > 0) and
	// β·agg(KL) (kl; only with the KL in the loss).
	GradTask    = "task"
	GradEntropy = "entropy"
	GradKL      = "kl"
	// The norms divided by the bucket's trajectories and by its tokens
	// under the loss mask: GradPerSample + GradTask = "per_sample/task".
	GradPerSample = "per_sample/"
	GradPerToken  = "per_token/"
	// The terms' values: "loss/policy", "loss/entropy" (the bonus term,
	// −c_H·agg(H)), "loss/kl" (β·agg(KL)) and their sum "loss/total".
	GradLossPolicy  = "loss/policy"
	GradLossEntropy = "loss/entropy"
	GradLossKL      = "loss/kl"
	GradLossTotal   = "loss/total"
)

// GradBucket is the name of a gradient-analysis metric of one bucket:
// GradBucket("bucket_2", GradTask) = "grad_norm/bucket_2/task".
func GradBucket(bucket, name string) string { return GradPrefix + bucket + "/" + name }
