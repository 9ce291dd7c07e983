// Package sample turns a row of logits into the next token: temperature,
// top-k and top-p (nucleus) filtering and greedy decoding, as Hugging Face
// transformers applies them, drawn from a seeded per-sequence random stream;
// and Stopper, which recognises stop sequences such as </answer>.
//
// Order of operations (HF's logits warpers, in HF's order):
//
//  1. temperature: x_i = logit_i / T (T == 0 means greedy: argmax, lowest
//     index on ties, no filtering);
//  2. top-k: keep every token whose x_i ≥ the k-th largest x (ties at the
//     k-th value are all kept, as HF's TopKLogitsWarper does);
//  3. top-p: with p_i = softmax(x) over the kept tokens, keep the smallest
//     prefix of them in descending order of p (ties: lower id first) whose
//     cumulative probability reaches p — a token is kept when the mass of
//     the tokens before it is < p, so the most likely token always stays;
//  4. draw: one uniform u in [0,1) from the sequence's RNG, then the inverse
//     CDF of the kept tokens, renormalised, walked in ascending token id.
//
// One call to Sampler.Sample consumes exactly one draw from the RNG it is
// given (greedy included, when an RNG is given), so a sequence's k-th token
// depends only on its seed, its own logits and k — not on which other
// sequences share its batch, on their lengths or on GOMAXPROCS.
//
// Non-finite logits never panic: NaN counts as -Inf (the token is never
// chosen); if some logits are +Inf, the distribution is the limit one,
// uniform over the +Inf tokens; if every logit is -Inf or NaN, Sample falls
// back to token 0. Sampler.Check reports such rows as errors for callers
// that want to stop instead.
package sample
