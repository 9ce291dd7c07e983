// Package tokenizer is a byte-level BPE tokenizer (the GPT-2 / Qwen2 / Llama 3
// scheme) that reads and writes Hugging Face tokenizer.json files and trains
// small vocabularies on environment text.
//
// Encoding a string takes four steps, each the same as Hugging Face's:
//
//  1. Added tokens (<|im_start|>, <think>, ...) are matched first, leftmost
//     and longest first, and become one id each; they are never split.
//  2. The text between them is optionally NFC-normalised (Unicode's NFC,
//     without the stream-safe format golang.org/x/text applies: a run of
//     more than 30 combining marks stays one run, as in the reference; see
//     nfc.go), then cut into pre-tokens ("words") by the split regex of a
//     named Pattern: GPT-2's, or Qwen2's (single digits, case-insensitive
//     contractions, newline rules), or
//     Llama 3's (digit runs of up to three). Go's regexp has no lookahead, so
//     each pattern is a hand-written scanner with the regex's leftmost-first,
//     backtracking semantics, including the `\s+(?!\S)` rule that leaves the
//     last space of a run to the next word.
//  3. Each word's bytes start as one token each (every byte has a token, so
//     no input is unknown), and ranked merges are applied lowest rank first,
//     leftmost first, with a heap. Results are cached per word.
//  4. Decoding concatenates each token's bytes, so Decode(Encode(s)) == s for
//     every string, invalid UTF-8 included (without a normaliser; NFC changes
//     text that is not already NFC).
//
// Byte-level means a token's text in the vocabulary is written in GPT-2's
// printable byte alphabet: byte 0x20 (space) is "Ġ", 0x0A is "Ċ", printable
// ASCII is itself. Token and TokenID use that form, like Hugging Face's
// id_to_token and token_to_id; Decode gives the raw bytes.
//
// Train builds a vocabulary with standard BPE training on pre-token counts.
// Its added tokens have fixed ids whatever the vocabulary size:
//
//	0 <|endoftext|>  end of text and padding
//	1 <|im_start|>   ChatML role marker
//	2 <|im_end|>     ChatML end of turn
//	3 <think>        4 </think>
//	5 <answer>       6 </answer>
//
// then the extra added tokens asked for, then the 256 byte tokens, then one
// token per merge.
package tokenizer
