// Package optim updates the model's parameters: AdamW with decoupled weight
// decay over one flat parameter buffer, global gradient-norm clipping, and
// learning-rate schedules.
//
// The model keeps parameters, gradients and optimizer moments each in one
// flat []float32 allocation; the optimizer sees only those flat buffers and
// a list of groups (ranges of the buffer) that say where weight decay
// applies — matrices decay, norms and biases do not, as in nanoGPT and
// Hugging Face's trainers.
//
// Every update is elementwise and every reduction (the gradient norm) runs
// over fixed chunks combined in chunk order, so results are bit-identical
// whatever GOMAXPROCS.
//
// A training loop:
//
//	opt, err := optim.New(cfg, len(params), groups)
//	...
//	norm := optim.ClipGradNorm(grads, 1.0) // before clipping: log it
//	lr, err := opt.Step(params, grads)
//
// To resume bit-identically, save opt.M, opt.V and opt.T with the
// parameters (see engine/checkpoint) and restore them with SetState.
package optim
