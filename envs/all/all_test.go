package all_test

import (
	"strings"
	"testing"

	"github.com/ragen-go/ragen/envs"
	_ "github.com/ragen-go/ragen/envs/all"
)

// Every built-in environment is registered, has an expert, and yields
// demonstrations in the chat layout the warm start trains on.
func TestDemonstrationsEveryEnvironment(t *testing.T) {
	want := []string{"bandit", "countdown", "frozenlake", "sokoban", "webshop"}
	if got := strings.Join(envs.Names(), " "); got != strings.Join(want, " ") {
		t.Errorf("registered %q, want %q", got, want)
	}
	for _, name := range envs.Names() {
		env, err := envs.New(name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		const n = 20
		demos, err := envs.Demonstrations(env, envs.DemoConfig{Episodes: n, Seed: 100,
			Turn: envs.DefaultTurnConfig(), Prompt: envs.DefaultPromptConfig()})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		solved := 0
		for _, d := range demos {
			if len(d.Messages) < 3 || d.Messages[0].Role != "system" {
				t.Fatalf("%s seed %d: %d messages", name, d.Seed, len(d.Messages))
			}
			for i, m := range d.Messages[1:] {
				if role := []string{"user", "assistant"}[i%2]; m.Role != role {
					t.Fatalf("%s seed %d: message %d is %s, want %s", name, d.Seed, i+1, m.Role, role)
				}
			}
			if d.Messages[len(d.Messages)-1].Role != "assistant" {
				t.Fatalf("%s seed %d: ends with a user message", name, d.Seed)
			}
			if d.Success {
				solved++
			}
		}
		t.Logf("%s: expert solved %d of %d episodes", name, solved, n)
	}
}
