package envs

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// All prompt text the agent reads is written here, so the trainer, the play
// command and the tests show the same words. The layout follows RAGEN
// (v1): the first user message is the environment's introduction followed
// by "Turn 1:" and the state block; each later user message starts with the
// previous turn's reward, then "Turn N:" and the state block. The words are
// our own.

// SystemMessage is the system message of every conversation.
const SystemMessage = "You are a helpful assistant."

// PromptConfig sets the parts of the prompt that do not come from the
// environment.
type PromptConfig struct {
	// Think asks for <think>…</think> before <answer>…</answer> (default true).
	Think bool
	// MaxResponseWords, when > 0, adds "Keep your response under N words."
	MaxResponseWords int
}

// DefaultPromptConfig returns think mode without a length hint.
func DefaultPromptConfig() PromptConfig { return PromptConfig{Think: true} }

// FormatHint describes the answer format in one line.
func FormatHint(think bool) string {
	if think {
		return "<think> your reasoning </think><answer> your answer </answer>"
	}
	return "<answer> your answer </answer>"
}

// ResponsePrefix is the text the agent's response is forced to start with:
// the generation prompt ends with it and the decoded response is parsed with
// it put back in front (as RAGEN does).
func ResponsePrefix(think bool) string {
	if think {
		return "<think>"
	}
	return "<answer>"
}

// Intro is the environment's introduction: its instruction, the legend of
// the state's symbols, the actions, the separator and the action budget.
func Intro(d Description) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(d.Instruction))
	if len(d.Legend) > 0 {
		b.WriteString("\nSymbols in the state: ")
		for i, s := range d.Legend {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s = %s", s.Glyph, s.Meaning)
		}
		b.WriteString(".")
	}
	if len(d.Actions) > 0 {
		b.WriteString("\nActions: " + strings.Join(d.Actions, ", ") + ".")
		if d.MaxActionsPerTurn > 1 {
			fmt.Fprintf(&b, "\nYou may give up to %d actions in one answer, separated by \" %s \"; they run in order.",
				d.MaxActionsPerTurn, ActionSeparator)
		} else {
			b.WriteString("\nGive exactly one action in your answer.")
		}
		if d.MaxActionsPerEpisode > 1 {
			fmt.Fprintf(&b, " The whole game allows %d actions.", d.MaxActionsPerEpisode)
		}
	}
	return b.String()
}

// StateBlock is the per-turn part of a user message:
//
//	Turn 2:
//	State:
//	<state>
//	You have 8 actions left. Answer in the form <think> …
func StateBlock(turn int, state string, actionsLeft int, c PromptConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Turn %d:\nState:\n%s\n", turn, strings.TrimRight(state, "\n"))
	switch actionsLeft {
	case 1:
		b.WriteString("You have 1 action left. ")
	default:
		fmt.Fprintf(&b, "You have %d actions left. ", actionsLeft)
	}
	b.WriteString("Answer in the form " + FormatHint(c.Think) + " and write nothing else.")
	if c.MaxResponseWords > 0 {
		fmt.Fprintf(&b, " Keep your response under %d words.", c.MaxResponseWords)
	}
	b.WriteString("\n")
	return b.String()
}

// UserMessage is the user message before the agent's turn number turn
// (from 1): the introduction and the state block for the first turn; the
// previous turn's reward and the state block after that.
func UserMessage(d Description, turn int, prevReward float64, state string, actionsLeft int, c PromptConfig) string {
	if turn <= 1 {
		return Intro(d) + "\n\n" + StateBlock(1, state, actionsLeft, c)
	}
	return "Reward: " + FormatReward(prevReward) + "\n\n" + StateBlock(turn, state, actionsLeft, c)
}

// FormatReward prints a reward rounded to 4 decimals without trailing
// zeros ("-0.1", "1", "0.3"), so sums like 0.1+0.2 read cleanly.
func FormatReward(r float64) string {
	r = math.Round(r*1e4) / 1e4
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
