package rollout

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/sample"
	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/envs"
	_ "github.com/ragen-go/ragen/envs/all"
)

// setup trains a vocabulary on Sokoban demonstrations and builds a random
// tiny policy over it: enough to play real multi-turn episodes.
func setup(t *testing.T) (*tokenizer.Tokenizer, *model.Model, func() envs.Env) {
	t.Helper()
	newEnv := func() envs.Env {
		e, err := envs.New("sokoban", map[string]any{"max_turns": 3})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	demos, err := envs.Demonstrations(newEnv(), envs.DemoConfig{Episodes: 16, Seed: 1, Turn: envs.DefaultTurnConfig(), Prompt: envs.DefaultPromptConfig()})
	if err != nil {
		t.Fatal(err)
	}
	var corpus []string
	for _, d := range demos {
		s, err := DemoText(d, true)
		if err != nil {
			t.Fatal(err)
		}
		corpus = append(corpus, s)
	}
	tok, err := tokenizer.Train(corpus, tokenizer.TrainConfig{VocabSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	c := model.Tiny()
	c.VocabSize, c.MaxPositions = tok.VocabSize(), 2048
	m, err := model.New(c, 7)
	if err != nil {
		t.Fatal(err)
	}
	return tok, m, newEnv
}

func play(t *testing.T, m *model.Model, tok *tokenizer.Tokenizer, newEnv func() envs.Env, n int, seeds ...uint64) []*Trajectory {
	t.Helper()
	return playIn(t, m, tok, nil, newEnv, n, seeds...)
}

func playIn(t *testing.T, m *model.Model, tok *tokenizer.Tokenizer, tmpl *hf.ChatTemplate, newEnv func() envs.Env, n int, seeds ...uint64) []*Trajectory {
	t.Helper()
	var tasks []Task
	for i, s := range seeds {
		tasks = append(tasks, Task{Env: newEnv(), EnvSeed: int64(10 + i/2), AgentSeed: s, Group: i / 2})
	}
	dec, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	trajs, err := Play(context.Background(), dec, tok, tasks[:n], Config{MaxTokensPerTurn: 24, Sample: sample.Options{Temperature: 1}, Turn: envs.DefaultTurnConfig(), Template: tmpl})
	if err != nil {
		t.Fatal(err)
	}
	return trajs
}

// The loss mask covers exactly the tokens the agent sampled: per turn, the
// masked tokens decode to the turn's response, and everything else is the
// context the template and the environment wrote.
func TestAgentMaskIsExactlySampledTokens(t *testing.T) {
	tok, m, newEnv := setup(t)
	trajs := play(t, m, tok, newEnv, 4, 1, 2, 3, 4)
	checkTrajectories(t, trajs, tok, nil, newEnv)
}

// checkTrajectories checks the layout of played trajectories: the masked
// runs are the turns' responses, the turn ends their last tokens, and the
// context before the first response is the template's.
func checkTrajectories(t *testing.T, trajs []*Trajectory, tok *tokenizer.Tokenizer, tmpl *hf.ChatTemplate, newEnv func() envs.Env) {
	t.Helper()
	chat, err := NewChat(tok, tmpl, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range trajs {
		if len(tr.Turns) == 0 {
			t.Fatalf("trajectory %d has no turns", i)
		}
		var runs [][]int
		for k, on := range tr.Agent {
			if on && (k == 0 || !tr.Agent[k-1]) {
				runs = append(runs, nil)
			}
			if on {
				runs[len(runs)-1] = append(runs[len(runs)-1], tr.Tokens[k])
			}
		}
		if len(runs) != len(tr.Turns) {
			t.Fatalf("trajectory %d: %d masked runs for %d turns", i, len(runs), len(tr.Turns))
		}
		ends := 0
		for k, e := range tr.TurnEnd {
			if e {
				ends++
				if !tr.Agent[k] || (k+1 < len(tr.Agent) && tr.Agent[k+1]) {
					t.Fatalf("trajectory %d: turn end at %d is not the last sampled token of a turn", i, k)
				}
			}
		}
		if ends != len(tr.Turns) {
			t.Fatalf("trajectory %d: %d turn ends for %d turns", i, ends, len(tr.Turns))
		}
		for k, run := range runs {
			text, err := tok.Decode(run)
			if err != nil {
				t.Fatal(err)
			}
			turn := tr.Turns[k]
			if text != turn.Response || len(run) != turn.Tokens {
				t.Fatalf("trajectory %d turn %d: masked tokens decode to %q, response %q", i, k, text, turn.Response)
			}
			if turn.Closed != strings.Contains(text, "</answer>") {
				t.Fatalf("trajectory %d turn %d: closed %v for response %q", i, k, turn.Closed, text)
			}
			if turn.ThinkTokens > turn.Tokens || turn.AnswerTokens > turn.Tokens {
				t.Fatalf("trajectory %d turn %d: %d think and %d answer tokens of %d", i, k, turn.ThinkTokens, turn.AnswerTokens, turn.Tokens)
			}
		}
		// Every sampled token has a span, no context token has one; a
		// closed response's answer tokens are the turn's AnswerTokens.
		if len(tr.Span) != len(tr.Tokens) {
			t.Fatalf("trajectory %d: %d spans for %d tokens", i, len(tr.Span), len(tr.Tokens))
		}
		turn, answer := 0, 0
		for k, on := range tr.Agent {
			if on == (tr.Span[k] == SpanContext) {
				t.Fatalf("trajectory %d: token %d (agent %v) has span %v", i, k, on, tr.Span[k])
			}
			if tr.Span[k] == SpanAnswer {
				answer++
			}
			if tr.TurnEnd[k] {
				if tr.Turns[turn].AnswerTokens != answer {
					t.Fatalf("trajectory %d turn %d: %d answer-span tokens, AnswerTokens %d", i, turn, answer, tr.Turns[turn].AnswerTokens)
				}
				turn, answer = turn+1, 0
			}
		}
		// The context before the first response is the template's text.
		first := 0
		for !tr.Agent[first] {
			first++
		}
		ep, _ := envs.Start(newEnv(), tr.EnvSeed, envs.DefaultTurnConfig())
		if got, want := tr.Tokens[:first], chat.First(ep.Desc, ep.Observation, ep.ActionsLeft); !reflect.DeepEqual(got, want) {
			gs, _ := tok.Decode(got)
			ws, _ := tok.Decode(want)
			t.Fatalf("trajectory %d: first context\n%q\nwant\n%q", i, gs, ws)
		}
	}
}

// A trajectory depends only on its own task: played alone or in a batch,
// it is the same token for token.
func TestTrajectoryIndependentOfBatch(t *testing.T) {
	tok, m, newEnv := setup(t)
	batch := play(t, m, tok, newEnv, 4, 11, 12, 13, 14)
	alone := play(t, m, tok, newEnv, 1, 11)
	if !reflect.DeepEqual(batch[0].Tokens, alone[0].Tokens) {
		t.Fatal("the first trajectory changed when played with others")
	}
}

func TestDemoLayoutMatchesPlay(t *testing.T) {
	tok, _, newEnv := setup(t)
	demos, err := envs.Demonstrations(newEnv(), envs.DemoConfig{Episodes: 2, Seed: 40, Turn: envs.DefaultTurnConfig(), Prompt: envs.DefaultPromptConfig()})
	if err != nil {
		t.Fatal(err)
	}
	chat, err := NewChat(tok, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := FromDemo(demos[0], chat, 200)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := DemoText(demos[0], true)
	got, _ := tok.Decode(tr.Tokens)
	if got != text {
		t.Fatalf("tokens decode to\n%q\nwant\n%q", got, text)
	}
	if _, err := FromDemo(demos[0], chat, 3); err == nil {
		t.Fatal("a response longer than max_tokens_per_turn must be an error")
	}
}

// TestContextFullFitsTheContext: an episode ended because its context
// cannot hold another response keeps only what the agent saw and answered,
// so the update can run it through the model; a context too small for
// even the first prompt is an error that says what to change.
func TestContextFullFitsTheContext(t *testing.T) {
	tok, m, newEnv := setup(t)
	first := play(t, m, tok, newEnv, 1, 1)[0]
	firstPrompt := len(first.Tokens)
	for i, ag := range first.Agent {
		if ag {
			firstPrompt = i
			break
		}
	}
	c := m.Config
	c.MaxPositions = firstPrompt + 24 + 40 // one turn fits, the second observation does not leave room
	small, err := model.New(c, 7)
	if err != nil {
		t.Fatal(err)
	}
	trajs := play(t, small, tok, newEnv, 4, 1, 2, 3, 4)
	full := 0
	for i, tr := range trajs {
		if len(tr.Tokens) > c.MaxPositions {
			t.Errorf("trajectory %d: %d tokens exceed the context of %d", i, len(tr.Tokens), c.MaxPositions)
		}
		if tr.ContextFull {
			full++
			if n := len(tr.Tokens); !tr.Agent[n-1] || !tr.TurnEnd[n-1] {
				t.Errorf("trajectory %d ended for a full context but does not end with the agent's response", i)
			}
		}
	}
	if full == 0 {
		t.Fatal("no episode ran out of context; the test does not test anything")
	}
	c.MaxPositions = firstPrompt + 10
	tiny, err := model.New(c, 7)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := tiny.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Play(context.Background(), dec, tok, []Task{{Env: newEnv(), EnvSeed: 10, AgentSeed: 1}}, Config{MaxTokensPerTurn: 24, Sample: sample.Options{Temperature: 1}, Turn: envs.DefaultTurnConfig()})
	if err == nil || !strings.Contains(err.Error(), "raise context_length") {
		t.Errorf("error %v, want one that says to raise context_length", err)
	}
}
