package rollout

import (
	"errors"
	"strings"

	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/sample"
	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/envs"
)

// Chat lays out a conversation in a chat template and tokenizes it chunk by
// chunk. With ChatML (Qwen's template, and our own models'):
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
// prompt). The system turn is the template's default system message:
// envs.SystemMessage for ChatML(), Qwen2.5's "You are Qwen, …" for its
// checkpoints, none for Qwen3's.
//
// Nothing needs to be a single token. A response ends when its text
// completes "</answer>" (sample.NewStringStopper): in a pretrained
// vocabulary the tag is several tokens, spelled differently after a letter
// or a space, and the token that closes it may run past it (">\n"), so no
// fixed token sequence would do. With our trained vocabularies, where
// </answer> is one added token, this is exactly stopping on that token.
type Chat struct {
	tok    *tokenizer.Tokenizer
	tmpl   *hf.ChatTemplate
	think  bool
	prefix string          // forced start of each response: "<think>" or "<answer>"
	stop   *sample.Stopper // the response's text completes </answer>
}

// ChatML is the template of our own models: plain ChatML whose system
// message is envs.SystemMessage (what hf.Save writes for them).
func ChatML() *hf.ChatTemplate {
	return &hf.ChatTemplate{Source: hf.ChatMLTemplate(envs.SystemMessage), DefaultSystem: envs.SystemMessage, EOS: tokenizer.ImEnd}
}

// NewChat lays conversations out in tmpl (nil: ChatML()) for tok, with or
// without the think block.
func NewChat(tok *tokenizer.Tokenizer, tmpl *hf.ChatTemplate, think bool) (*Chat, error) {
	if tok == nil {
		return nil, errors.New("rollout: no tokenizer")
	}
	if tmpl == nil {
		tmpl = ChatML()
	}
	c := &Chat{tok: tok, tmpl: tmpl, think: think, prefix: envs.ResponsePrefix(think)}
	c.stop = sample.NewStringStopper(c.tokenText, []string{tokenizer.AnswerEnd})
	return c, nil
}

// tokenText is the text of one token. An id the tokenizer does not know
// stands for no text, as Hugging Face decodes it: a pretrained model's
// embedding has rows past its vocabulary (Qwen2.5: 151936 rows for 151665
// tokens), and the policy may sample them.
func (c *Chat) tokenText(id int) string {
	s, _ := c.tok.Decode([]int{id})
	return s
}

// decode is the text of sampled tokens (see tokenText).
func (c *Chat) decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(c.tokenText(id))
	}
	return b.String()
}

// FirstText is the conversation up to the first response in our ChatML
// template (ChatML()).
func FirstText(d envs.Description, state string, actionsLeft int, think bool) string {
	return firstContext(ChatML(), envs.UserMessage(d, 1, 0, state, actionsLeft, envs.PromptConfig{Think: think}), think)
}

// NextText is the context between response turn−1 and response turn in our
// ChatML template.
func NextText(d envs.Description, prevReward float64, turn int, state string, actionsLeft int, think bool) string {
	return nextContext(ChatML(), envs.UserMessage(d, turn, prevReward, state, actionsLeft, envs.PromptConfig{Think: think}), think)
}

// The layout, in one place: the context before the first response, and the
// context between two responses, around the user message.
func firstContext(t *hf.ChatTemplate, user string, think bool) string {
	return t.Prompt("", user) + envs.ResponsePrefix(think)
}

func nextContext(t *hf.ChatTemplate, user string, think bool) string {
	return t.Continue(user) + envs.ResponsePrefix(think)
}

// First tokenizes the conversation up to the first response.
func (c *Chat) First(d envs.Description, state string, actionsLeft int) []int {
	return c.tok.Encode(firstContext(c.tmpl, envs.UserMessage(d, 1, 0, state, actionsLeft, envs.PromptConfig{Think: c.think}), c.think))
}

// Next tokenizes the context between response turn−1 and response turn.
func (c *Chat) Next(d envs.Description, prevReward float64, turn int, state string, actionsLeft int) []int {
	return c.tok.Encode(nextContext(c.tmpl, envs.UserMessage(d, turn, prevReward, state, actionsLeft, envs.PromptConfig{Think: c.think}), c.think))
}

// Prefix is the forced start of every response.
func (c *Chat) Prefix() string { return c.prefix }

// Stop is the stop condition of a response: its text completes </answer>.
func (c *Chat) Stop() *sample.Stopper { return c.stop }
