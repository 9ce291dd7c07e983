// Package rollout plays multi-turn episodes with the policy: every live
// conversation is one growing token sequence, generation is batched over
// all of them with a KV cache kept across turns, and each response is
// parsed and applied to its environment by the shared turn runner in envs.
// The result is one Trajectory per episode: tokens, the loss mask of the
// agent's own tokens, turn ends and per-turn records.
//
// Conversations are laid out in a chat template (Chat): our ChatML for the
// models trained here, or a pretrained model's own. The response tags need
// not be single tokens: a response ends when its text completes </answer>.
package rollout
