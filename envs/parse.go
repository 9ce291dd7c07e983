package envs

import "strings"

// ActionSeparator separates the actions of one answer: "Up || Up || Left".
const ActionSeparator = "||"

// Parsed is what Parse found in one response.
type Parsed struct {
	// FormatOK: the response has the required tags in order:
	// <think>…</think> then, after optional white space, <answer>…</answer>
	// (or only <answer>…</answer> in no-think mode).
	FormatOK bool
	// Think is the reasoning text, trimmed, special tokens removed.
	Think string
	// Answer is the answer text, trimmed, special tokens removed.
	Answer string
	// Actions are the answer's actions: split at ||, trimmed, empty ones
	// dropped, cut to the per-turn maximum.
	Actions []string
	// Cut is the number of actions dropped by the per-turn maximum.
	Cut int
	// Valid are the actions that name an action of the environment, in the
	// environment's spelling, in order. For a language environment (no
	// action names) every action is valid as written.
	Valid []string
	// Unknown counts the actions that name no action of the environment.
	Unknown int
}

// Canonical returns the response as it is kept for training, after RAGEN:
// "<think>T</think><answer>A || B</answer>" rebuilt from the parsed parts
// (the answer re-joined from the kept actions), or raw unchanged when the
// format is broken.
func (p Parsed) Canonical(raw string, think bool) string {
	if !p.FormatOK {
		return raw
	}
	answer := "<answer>" + strings.Join(p.Actions, " "+ActionSeparator+" ") + "</answer>"
	if !think {
		return answer
	}
	return "<think>" + p.Think + "</think>" + answer
}

// Parse reads one response of the agent. think selects the format with a
// <think> block; actions are the environment's action names (empty for a
// language environment); maxActions cuts the answer (≤ 0: no cut).
//
// Tags are matched case-insensitively. The rules follow RAGEN's regular
// expression <think>(.*?)</think>\s*<answer>(.*?)</answer> (first match,
// dot matches newline) but are implemented as a few forward scans, so Parse
// runs in time linear in the response length whatever the input, and never
// panics. Text before <think> and after </answer> is ignored.
func Parse(response string, think bool, actions []string, maxActions int) Parsed {
	var p Parsed
	lower := asciiLower(response)
	var thinkText, answerText string
	if think {
		// The leftmost <think> starts the match; the think block runs to the
		// first </think> that is followed by white space and <answer> with a
		// </answer> somewhere after it.
		t := strings.Index(lower, "<think>")
		if t < 0 {
			return p
		}
		bodyStart := t + len("<think>")
		ansStart := -1
		for i := bodyStart; ; {
			j := strings.Index(lower[i:], "</think>")
			if j < 0 {
				return p
			}
			end := i + j
			k := end + len("</think>")
			for k < len(lower) && isSpace(lower[k]) {
				k++
			}
			if strings.HasPrefix(lower[k:], "<answer>") {
				thinkText = response[bodyStart:end]
				ansStart = k + len("<answer>")
				break
			}
			i = k
		}
		e := strings.Index(lower[ansStart:], "</answer>")
		if e < 0 {
			return p
		}
		answerText = response[ansStart : ansStart+e]
	} else {
		a := strings.Index(lower, "<answer>")
		if a < 0 {
			return p
		}
		ansStart := a + len("<answer>")
		e := strings.Index(lower[ansStart:], "</answer>")
		if e < 0 {
			return p
		}
		answerText = response[ansStart : ansStart+e]
	}
	p.FormatOK = true
	p.Think = strings.TrimSpace(stripSpecial(thinkText))
	p.Answer = strings.TrimSpace(stripSpecial(answerText))
	// Split at ||, keeping at most maxActions and counting the rest, so a
	// huge answer costs no allocation per dropped action.
	for rest := p.Answer; ; {
		part, after, more := strings.Cut(rest, ActionSeparator)
		if a := strings.TrimSpace(part); a != "" {
			if maxActions <= 0 || len(p.Actions) < maxActions {
				p.Actions = append(p.Actions, a)
			} else {
				p.Cut++
			}
		}
		if !more {
			break
		}
		rest = after
	}
	for _, a := range p.Actions {
		if len(actions) == 0 {
			p.Valid = append(p.Valid, a)
			continue
		}
		if name, ok := MatchAction(a, actions); ok {
			p.Valid = append(p.Valid, name)
		} else {
			p.Unknown++
		}
	}
	return p
}

// MatchAction returns the action name that a equals ignoring case, in the
// environment's spelling.
func MatchAction(a string, actions []string) (string, bool) {
	for _, name := range actions {
		if strings.EqualFold(a, name) {
			return name, true
		}
	}
	return "", false
}

// specialTokens are removed from the think and answer text, as RAGEN does.
var specialTokens = []string{"<think>", "</think>", "<answer>", "</answer>", "<|im_start|>", "<|im_end|>"}

// stripSpecial removes the special tokens (any case) in one forward pass.
func stripSpecial(s string) string {
	if strings.IndexByte(s, '<') < 0 {
		return s
	}
	lower := asciiLower(s)
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] == '<' {
			if n := specialAt(lower[i:]); n > 0 {
				i += n
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func specialAt(s string) int {
	for _, t := range specialTokens {
		if strings.HasPrefix(s, t) {
			return len(t)
		}
	}
	return 0
}

// asciiLower lowers ASCII letters only, so byte offsets in the result are
// offsets in s (strings.ToLower may change the length of non-ASCII text).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
