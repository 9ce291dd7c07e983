// Package train runs StarPO and StarPO-S: multi-turn rollouts of a token
// level policy in text environments, rewards (with a user hook), the
// StarPO-S group filter, advantages (GAE with a critic, GRPO and friends),
// PPO updates of actor and critic, validation on held-out seeds, the
// collapse monitor, run directories, checkpoints and resume.
//
// One step, top to bottom (Trainer.Step):
//
//  1. rollout   env_groups × group_size episodes; a group shares a reset seed
//  2. rewards   per trajectory: the sum of turn rewards (format penalty
//     included) or the user's reward function; on step 1 and every
//     collapse_every steps, RAGEN-2's template-collapse metrics
//     (collapse.go: MI of prompt and reasoning, retrieval accuracy)
//  3. filter    keep the top filter_ratio of groups by in-group reward std
//  4. prepare   old and reference log-probs, critic values, advantages
//  5. update    critic, then actor: PPO epochs over minibatches, AdamW
//  6. validate  every val_every steps on fixed held-out seeds
//
// The policy starts from a warm start: supervised fine-tuning on expert
// demonstrations (see warmStart), cached by a hash of its configuration —
// or from a loaded model (see initialPolicy): a Hugging Face checkpoint
// (Config.Pretrained, e.g. Qwen2.5-0.5B-Instruct, with its tokenizer and
// chat template) or one of our checkpoints (Config.Init).
//
// With Config.Comm the run is one rank of a data-parallel run (dist.go):
// the ranks share the rollouts and the update and compute the same bits on
// any number of processes.
package train
