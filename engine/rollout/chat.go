package rollout

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/envs"
)

// Chat renders a conversation in the ChatML template Qwen models use and
// tokenizes it chunk by chunk:
//
//	<|im_start|>system\n{system}<|im_end|>\n
//	<|im_start|>user\n{intro + turn 1 state}<|im_end|>\n
//	<|im_start|>assistant\n<think>{response 1: sampled, ends with </answer>}
//	<|im_end|>\n<|im_start|>user\n{reward 1 + turn 2 state}<|im_end|>\n
//	<|im_start|>assistant\n<think>{response 2} ...
//
// The agent samples only the response text; everything else, including the
// <|im_end|> that closes its turn and the forced "<think>" that opens the
// next one, is context (as RAGEN appends "<think>" after the generation
// prompt).
type Chat struct {
	tok       *tokenizer.Tokenizer
	think     bool
	prefix    string // forced start of each response: "<think>" or "<answer>"
	answerEnd int    // id of </answer>: the stop token
	thinkEnd  int    // id of </think>
	answerBeg int    // id of <answer>
}

// NewChat checks that the tokenizer has the ChatML markers and the
// response tags as single tokens.
func NewChat(tok *tokenizer.Tokenizer, think bool) (*Chat, error) {
	sp := tok.SpecialIDs()
	for _, s := range []struct {
		name string
		id   int
	}{{tokenizer.ImStart, sp.ImStart}, {tokenizer.ImEnd, sp.ImEnd}, {tokenizer.AnswerStart, sp.AnswerStart},
		{tokenizer.AnswerEnd, sp.AnswerEnd}, {tokenizer.ThinkStart, sp.ThinkStart}, {tokenizer.ThinkEnd, sp.ThinkEnd}} {
		if s.id < 0 {
			return nil, fmt.Errorf("rollout: the tokenizer has no single token for %s: train or load a tokenizer with the chat and response tags as added tokens", s.name)
		}
	}
	return &Chat{
		tok: tok, think: think, prefix: envs.ResponsePrefix(think),
		answerEnd: sp.AnswerEnd, thinkEnd: sp.ThinkEnd, answerBeg: sp.AnswerStart,
	}, nil
}

// FirstText is the conversation up to the first response.
func FirstText(d envs.Description, state string, actionsLeft int, think bool) string {
	return firstContext(envs.UserMessage(d, 1, 0, state, actionsLeft, envs.PromptConfig{Think: think}), think)
}

// NextText is the context between response turn−1 and response turn.
func NextText(d envs.Description, prevReward float64, turn int, state string, actionsLeft int, think bool) string {
	return nextContext(envs.UserMessage(d, turn, prevReward, state, actionsLeft, envs.PromptConfig{Think: think}), think)
}

// The template, in one place: the context before the first response, and
// the context between two responses, around the user message.
func firstContext(user string, think bool) string {
	return "<|im_start|>system\n" + envs.SystemMessage + "<|im_end|>\n" +
		"<|im_start|>user\n" + user + "<|im_end|>\n" +
		"<|im_start|>assistant\n" + envs.ResponsePrefix(think)
}

func nextContext(user string, think bool) string {
	return "<|im_end|>\n<|im_start|>user\n" + user + "<|im_end|>\n" +
		"<|im_start|>assistant\n" + envs.ResponsePrefix(think)
}

// First tokenizes FirstText.
func (c *Chat) First(d envs.Description, state string, actionsLeft int) []int {
	return c.tok.Encode(FirstText(d, state, actionsLeft, c.think))
}

// Next tokenizes NextText.
func (c *Chat) Next(d envs.Description, prevReward float64, turn int, state string, actionsLeft int) []int {
	return c.tok.Encode(NextText(d, prevReward, turn, state, actionsLeft, c.think))
}

// Prefix is the forced start of every response.
func (c *Chat) Prefix() string { return c.prefix }

// StopToken is the token that ends a response: </answer>.
func (c *Chat) StopToken() int { return c.answerEnd }
