package rollout

import (
	"strings"

	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/envs"
)

// Trajectory is one played episode: the whole conversation as one token
// sequence, which tokens the agent sampled, and the record of every turn.
//
// The loss mask (Agent) covers exactly the tokens the agent sampled. We
// train on those sampled tokens themselves; RAGEN instead re-tokenizes a
// cleaned-up text of each response, so its training tokens can differ from
// what was sampled. Ours cannot.
type Trajectory struct {
	Group   int   // group index: the members of a group share EnvSeed
	EnvSeed int64 // the Reset seed of the initial state

	Tokens  []int  // the conversation: context and responses
	Agent   []bool // [len(Tokens)] true on tokens the agent sampled
	TurnEnd []bool // [len(Tokens)] true on the last sampled token of each turn
	Span    []Span // [len(Tokens)] the part of its response each sampled token lies in (SpanContext elsewhere)
	Turns   []Turn

	Success     bool // the environment reports the episode solved
	ContextFull bool // ended because the context window could not hold another turn

	episode *envs.Episode
}

// Span is the part of a response a sampled token lies in, by the tags'
// positions in the response text (see Chat.tokenSpans).
type Span uint8

const (
	SpanContext Span = iota // not sampled: prompt, observation, forced prefix
	SpanThink               // wholly inside <think>…</think>
	SpanAnswer              // wholly inside <answer>…</answer>
	SpanFormat              // the rest: the tags themselves, text between or after the blocks
)

// String is the span's name in loss-mask expressions: context, think,
// answer, format.
func (s Span) String() string {
	switch s {
	case SpanThink:
		return "think"
	case SpanAnswer:
		return "answer"
	case SpanFormat:
		return "format"
	}
	return "context"
}

// Turn is the record of one agent turn.
type Turn struct {
	envs.TurnResult
	Response     string // the decoded sampled text (without the forced prefix)
	Tokens       int    // sampled tokens
	ThinkTokens  int    // sampled tokens wholly before </think> (all of them if it is missing)
	AnswerTokens int    // sampled tokens wholly between <answer> and </answer>
	Closed       bool   // the response ended by completing </answer> (not cut by the token limit)
}

func (t *Trajectory) appendContext(ids []int) {
	t.Tokens = append(t.Tokens, ids...)
	t.Agent = append(t.Agent, make([]bool, len(ids))...)
	t.TurnEnd = append(t.TurnEnd, make([]bool, len(ids))...)
	t.Span = append(t.Span, make([]Span, len(ids))...)
}

// dropContext removes the last n context tokens (an observation appended
// for a turn that will not be played).
func (t *Trajectory) dropContext(n int) {
	k := len(t.Tokens) - n
	t.Tokens, t.Agent, t.TurnEnd, t.Span = t.Tokens[:k], t.Agent[:k], t.TurnEnd[:k], t.Span[:k]
}

// appendResponse appends one turn's response tokens: the agent's, the
// last of them marking the turn's end, each in its span.
func (t *Trajectory) appendResponse(ids []int, spans []Span) {
	n := len(t.Tokens)
	t.Tokens = append(t.Tokens, ids...)
	t.Span = append(t.Span, spans...)
	for range ids {
		t.Agent = append(t.Agent, true)
		t.TurnEnd = append(t.TurnEnd, false)
	}
	if len(ids) > 0 {
		t.TurnEnd[n+len(ids)-1] = true
	}
}

func (t *Trajectory) addTurn(sampled []int, text string, res envs.TurnResult, c *Chat) {
	t.appendResponse(sampled, c.tokenSpans(sampled, text))
	turn := Turn{TurnResult: res, Response: text, Tokens: len(sampled), Closed: c.stop.Match(sampled)}
	turn.ThinkTokens, turn.AnswerTokens = c.blockTokens(sampled, text)
	t.Turns = append(t.Turns, turn)
}

func (t *Trajectory) finish() {
	t.Success = t.episode.Success
}

// Reward is the episode's reward: the sum of the turn rewards, format
// penalties included.
func (t *Trajectory) Reward() float64 {
	var s float64
	for _, r := range t.Turns {
		s += r.Reward
	}
	return s
}

// TurnRewards returns each turn's reward, in order.
func (t *Trajectory) TurnRewards() []float64 {
	r := make([]float64, len(t.Turns))
	for i, turn := range t.Turns {
		r[i] = turn.Reward
	}
	return r
}

// Counts sums the per-turn action counts.
func (t *Trajectory) Counts() (actions, valid, invalid, formatOK int) {
	for _, r := range t.Turns {
		actions += len(r.Executed)
		valid += r.Valid
		invalid += r.Invalid
		if !r.Parsed.FormatBroken() {
			formatOK++
		}
	}
	return
}

// Text decodes the conversation for people (special tokens shown).
func (t *Trajectory) Text(tok *tokenizer.Tokenizer) string {
	s, err := tok.Decode(t.Tokens)
	if err != nil {
		return "<undecodable: " + err.Error() + ">"
	}
	return s
}

// tokenSpans places each sampled token in its span by the same rule as
// blockTokens: a token is in a block when its text lies wholly inside it.
// When </think> is missing the think block is the whole response, less the
// answer if there is one.
func (c *Chat) tokenSpans(sampled []int, text string) []Span {
	spans := make([]Span, len(sampled))
	start := make([]int, len(sampled)+1)
	for i, id := range sampled {
		start[i+1] = start[i] + len(c.tokenText(id))
		spans[i] = SpanFormat
	}
	mark := func(lo, hi int, s Span) {
		for i := range sampled {
			if start[i] >= lo && start[i+1] <= hi {
				spans[i] = s
			}
		}
	}
	ansLo := 0
	if c.think {
		thinkHi := len(text)
		if k := strings.Index(text, tokenizer.ThinkEnd); k >= 0 {
			thinkHi = k
		}
		mark(0, thinkHi, SpanThink)
		ansLo = -1
		if k := strings.Index(text, tokenizer.AnswerStart); k >= 0 {
			ansLo = k + len(tokenizer.AnswerStart)
		}
	}
	if ansLo >= 0 {
		if k := strings.Index(text[ansLo:], tokenizer.AnswerEnd); k >= 0 {
			mark(ansLo, ansLo+k, SpanAnswer)
		}
	}
	return spans
}

// blockTokens counts the sampled tokens of the think block and of the
// answer, from the tags' positions in the response text, so that tags
// spelled by several tokens count like single-token ones: a token counts
// when its text lies wholly inside the block. With a forced <think> the
// think block runs from the start of the response to </think> (the whole
// response if it never closes); the answer runs from <answer> — the start
// of the response when <answer> is the forced prefix — to the first
// </answer> after it (0 tokens if either tag is missing).
func (c *Chat) blockTokens(sampled []int, text string) (think, answer int) {
	start := make([]int, len(sampled)+1) // byte offset where each token's text starts
	for i, id := range sampled {
		start[i+1] = start[i] + len(c.tokenText(id))
	}
	count := func(lo, hi int) int { // tokens whose text lies in text[lo:hi]
		k := 0
		for i := range sampled {
			if start[i] >= lo && start[i+1] <= hi {
				k++
			}
		}
		return k
	}
	ansLo := 0
	if c.think {
		think = len(sampled)
		if k := strings.Index(text, tokenizer.ThinkEnd); k >= 0 {
			think = count(0, k)
		}
		ansLo = -1
		if k := strings.Index(text, tokenizer.AnswerStart); k >= 0 {
			ansLo = k + len(tokenizer.AnswerStart)
		}
	}
	if ansLo >= 0 {
		if k := strings.Index(text[ansLo:], tokenizer.AnswerEnd); k >= 0 {
			answer = count(ansLo, ansLo+k)
		}
	}
	return think, answer
}
