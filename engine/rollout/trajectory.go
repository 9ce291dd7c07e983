package rollout

import (
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
	Turns   []Turn

	Success     bool // the environment reports the episode solved
	ContextFull bool // ended because the context window could not hold another turn

	episode *envs.Episode
}

// Turn is the record of one agent turn.
type Turn struct {
	envs.TurnResult
	Response     string // the decoded sampled text (without the forced prefix)
	Tokens       int    // sampled tokens
	ThinkTokens  int    // sampled tokens before </think>
	AnswerTokens int    // sampled tokens between <answer> and </answer>
	Closed       bool   // the response ended with </answer> (not cut by the token limit)
}

func (t *Trajectory) appendContext(ids []int) {
	t.Tokens = append(t.Tokens, ids...)
	t.Agent = append(t.Agent, make([]bool, len(ids))...)
	t.TurnEnd = append(t.TurnEnd, make([]bool, len(ids))...)
}

func (t *Trajectory) addTurn(sampled []int, text string, res envs.TurnResult, c *Chat) {
	n := len(t.Tokens)
	t.Tokens = append(t.Tokens, sampled...)
	for range sampled {
		t.Agent = append(t.Agent, true)
		t.TurnEnd = append(t.TurnEnd, false)
	}
	if len(sampled) > 0 {
		t.TurnEnd[n+len(sampled)-1] = true
	}
	turn := Turn{TurnResult: res, Response: text, Tokens: len(sampled)}
	// With a forced <think> prefix the think block runs from the first
	// sampled token to </think>; the answer from <answer> to </answer>.
	thinkEnd, ansBeg, ansEnd := -1, -1, -1
	for i, id := range sampled {
		switch {
		case id == c.thinkEnd && thinkEnd < 0:
			thinkEnd = i
		case id == c.answerBeg && ansBeg < 0:
			ansBeg = i
		case id == c.answerEnd && ansEnd < 0 && ansBeg >= 0:
			ansEnd = i
		}
	}
	if c.prefix == envs.ResponsePrefix(true) {
		if thinkEnd >= 0 {
			turn.ThinkTokens = thinkEnd
		} else {
			turn.ThinkTokens = len(sampled)
		}
	} else if ansBeg < 0 {
		ansBeg = -1 // no-think mode: <answer> is the forced prefix
	}
	if ansEnd >= 0 {
		turn.AnswerTokens = ansEnd - ansBeg - 1
	}
	turn.Closed = len(sampled) > 0 && sampled[len(sampled)-1] == c.answerEnd
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
