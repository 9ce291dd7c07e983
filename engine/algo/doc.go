// Package algo is the math of StarPO and StarPO-S (RAGEN): advantage
// estimators, the PPO policy loss, loss aggregation, KL to a reference
// policy, the entropy bonus, the critic's value loss and the group filter —
// small pure functions on plain slices, no model inside. The trainer calls
// them in this order each step:
//
//	rollout  → []Trajectory          one token sequence per episode: Mask (agent tokens),
//	                                 Reward (on agent tokens), Value (critic), TurnEnd, Group
//	rewards  → PlaceRewards          per-turn rewards onto tokens (reward_placement last | turn)
//	filter   → FilterGroupsBy        StarPO-S: keep the groups whose returns disagree most;
//	                                 RAGEN v2: top_p | top_k | min_p over reward, entropy or length statistics
//	           KLRewards             only for kl_placement = reward
//	advantage→ Advantages            gae | bi_level_gae | grpo | dr_grpo | rloo | reinforce | reinforce_pp[_baseline]
//	update   → ComputeActorLoss      PPO clip (clip-higher, dual clip) + entropy bonus [+ KL loss],
//	           ComputeValueLoss      aggregated by AggWeights; each returns ∂Loss/∂(logp, H, V)
//	                                 per token for the model to back-propagate
//
// Shapes: a batch is ragged, one []float64 (or []bool) per trajectory, all of
// a trajectory's slices of the same length T; index t is the token being
// predicted, so Value[t] is the critic at the state before token t. Tokens
// the agent did not sample (prompt, observations) get exactly zero advantage
// and zero gradient everywhere.
//
// Every formula is given in the doc comment of its function, with the
// config key, the default and the system it follows (veRL, which RAGEN runs
// on, unless said otherwise); Config lists every knob and the presets
// StarPO and StarPOS give the paper's two settings.
//
// Determinism: loops run in batch then token order, groups are numbered in
// order of first appearance (maps are looked up, never iterated), so equal
// inputs give bit-identical outputs.
package algo
