package rollout

import (
	"fmt"
	"strings"

	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/envs"
)

// Expert episodes (envs.Demonstrations) are laid out exactly as Play lays
// out the agent's own episodes: same template, same context chunks, the
// responses (after the forced prefix) as the agent's tokens. They are the
// warm start's training data.

// demoPiece is a stretch of a demonstration: context or a response.
type demoPiece struct {
	text     string
	response bool
}

// demoPieces lays d out in tmpl. The demonstration's system message must
// be envs.SystemMessage (the one every environment writes); the layout
// puts the template's own system turn in its place, as Play does.
func demoPieces(d envs.Demo, tmpl *hf.ChatTemplate, think bool) ([]demoPiece, error) {
	var pieces []demoPiece
	prefix := envs.ResponsePrefix(think)
	turns := 0
	for _, m := range d.Messages {
		switch m.Role {
		case "system":
			if m.Content != envs.SystemMessage {
				return nil, fmt.Errorf("rollout: demonstration %d has a system message other than envs.SystemMessage", d.Seed)
			}
		case "user":
			if turns == 0 {
				pieces = append(pieces, demoPiece{text: firstContext(tmpl, m.Content, think)})
			} else {
				pieces = append(pieces, demoPiece{text: nextContext(tmpl, m.Content, think)})
			}
		case "assistant":
			turns++
			text := strings.TrimPrefix(strings.TrimSpace(m.Content), prefix)
			pieces = append(pieces, demoPiece{text: text, response: true})
		default:
			return nil, fmt.Errorf("rollout: demonstration %d has a message with role %q", d.Seed, m.Role)
		}
	}
	return pieces, nil
}

// DemoText returns a demonstration's conversation in our ChatML template
// as text: the corpus a small vocabulary is trained on, before any
// tokenizer exists.
func DemoText(d envs.Demo, think bool) (string, error) {
	pieces, err := demoPieces(d, ChatML(), think)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range pieces {
		b.WriteString(p.text)
	}
	return b.String(), nil
}

// FromDemo lays a demonstration out as chat does and tokenizes it into a
// trajectory whose Agent mask covers the responses' tokens. A response
// longer than maxTokens is an error: the agent could never write it.
func FromDemo(d envs.Demo, chat *Chat, maxTokens int) (*Trajectory, error) {
	pieces, err := demoPieces(d, chat.tmpl, chat.think)
	if err != nil {
		return nil, err
	}
	t := &Trajectory{EnvSeed: d.Seed, Success: d.Success}
	for _, p := range pieces {
		ids := chat.tok.Encode(p.text)
		if !p.response {
			t.appendContext(ids)
			continue
		}
		if len(ids) > maxTokens {
			return nil, fmt.Errorf("rollout: a demonstration response has %d tokens, more than max_tokens_per_turn %d: raise the limit or shorten the expert's reasoning", len(ids), maxTokens)
		}
		t.appendResponse(ids, chat.tokenSpans(ids, chat.decode(ids)))
	}
	return t, nil
}
