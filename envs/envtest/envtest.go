package envtest

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/envs"
)

// update is the one -update flag of every package that imports envtest
// (a test package must not define its own, the names would clash).
var update = flag.Bool("update", false, "rewrite golden files under testdata/ with the current output")

// Golden compares got with testdata/name, or writes it there with -update.
func Golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'go test -run %s -update' to create it)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is intended):\n%s",
			path, firstDiff(string(want), got))
	}
}

// firstDiff shows the first differing line of want and got.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b || i >= len(w) || i >= len(g) {
			return fmt.Sprintf("line %d:\nwant: %q\ngot:  %q", i+1, a, b)
		}
	}
	return "(same lines, different line endings)"
}

// Policy answers the agent's turn: it sees the episode (the current state in
// ep.Observation) and returns a response text.
type Policy func(ep *envs.Episode) string

// ExpertPolicy answers with the environment's demonstrations, drawn with a
// generator seeded by seed; imperfect selects the imperfect demonstrations.
func ExpertPolicy(seed int64, imperfect bool) Policy {
	rng := rand.New(rand.NewSource(seed))
	return func(ep *envs.Episode) string {
		return ep.Env.(envs.Expert).Demonstrate(rng, imperfect)
	}
}

// Scripted answers with the given responses in turn, then with "" (a broken
// format) when they run out.
func Scripted(responses ...string) Policy {
	i := 0
	return func(*envs.Episode) string {
		if i >= len(responses) {
			return ""
		}
		i++
		return responses[i-1]
	}
}

// Transcript plays one episode of env from seed with policy and returns it
// as the agent reads it (system and user messages from envs.UserMessage)
// with each response and the turn's summary, for golden files.
func Transcript(env envs.Env, seed int64, policy Policy) (string, error) {
	ep, err := envs.Start(env, seed, envs.DefaultTurnConfig())
	if err != nil {
		return "", err
	}
	pc := envs.DefaultPromptConfig()
	var b strings.Builder
	fmt.Fprintf(&b, "=== system\n%s\n", envs.SystemMessage)
	prev := 0.0
	for !ep.Done {
		fmt.Fprintf(&b, "=== user\n%s", envs.UserMessage(ep.Desc, ep.Turn+1, prev, ep.Observation, ep.ActionsLeft, pc))
		resp := policy(ep)
		fmt.Fprintf(&b, "=== assistant\n%s\n", resp)
		r, err := ep.Step(resp)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "=== turn %d\n%s", ep.Turn, r.Summary())
		prev = r.Reward
	}
	fmt.Fprintf(&b, "=== end\nturns %d, return %s, success %v\nfinal state:\n%s\n",
		ep.Turn, envs.FormatReward(ep.Return()), ep.Success, strings.TrimRight(ep.Observation, "\n"))
	return b.String(), nil
}

// Check runs the contract every environment must keep, on a few seeds:
// Reset is deterministic and its observation is Render; the description is
// complete; an unknown action neither panics nor counts as valid; expert
// demonstrations (perfect and imperfect) parse with known actions and leave
// the state unchanged; whole episodes played by the expert, imperfectly, and
// by a random typist finish within the turn limit and replay identically.
// newEnv must return a fresh instance with the options under test.
func Check(t *testing.T, newEnv func() envs.Env, seeds ...int64) {
	t.Helper()
	for _, seed := range seeds {
		a, b := newEnv(), newEnv()
		oa, err := a.Reset(seed)
		if err != nil {
			t.Fatalf("seed %d: Reset: %v", seed, err)
		}
		ob, err := b.Reset(seed)
		if err != nil {
			t.Fatalf("seed %d: Reset: %v", seed, err)
		}
		if oa != ob {
			t.Errorf("seed %d: two instances reset with the same seed differ:\n%s\n---\n%s", seed, oa, ob)
		}
		if r := a.Render(); r != oa {
			t.Errorf("seed %d: Render after Reset differs from the observation:\n%s\n---\n%s", seed, r, oa)
		}
		d := a.Describe()
		if d.Name == "" || d.Instruction == "" || d.MaxActionsPerTurn < 1 || d.MaxActionsPerEpisode < 1 || d.MaxTurns < 1 {
			t.Errorf("seed %d: incomplete description %+v", seed, d)
		}
		if len(d.Actions) > 0 {
			s := a.Step("no-such-action")
			if s.Info.Valid || s.Info.Effective {
				t.Errorf("seed %d: an unknown action is reported valid or effective: %+v", seed, s.Info)
			}
			a.Reset(seed)
		}
		if _, ok := a.(envs.Expert); ok {
			checkDemos(t, a, seed)
		}
		for _, p := range []struct {
			name string
			mk   func() Policy
		}{
			{"expert", func() Policy { return expertOr(seed, false) }},
			{"imperfect", func() Policy { return expertOr(seed, true) }},
			{"random", func() Policy { return randomTyper(seed) }},
		} {
			t1, err := Transcript(newEnv(), seed, p.mk())
			if err != nil {
				t.Fatalf("seed %d, %s policy: %v", seed, p.name, err)
			}
			t2, _ := Transcript(newEnv(), seed, p.mk())
			if t1 != t2 {
				t.Errorf("seed %d, %s policy: the same episode played twice differs", seed, p.name)
			}
		}
	}
}

func checkDemos(t *testing.T, env envs.Env, seed int64) {
	t.Helper()
	d := env.Describe()
	before := env.Render()
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 20; i++ {
		resp := env.(envs.Expert).Demonstrate(rng, i%2 == 1)
		p := envs.Parse(resp, true, d.Actions, d.MaxActionsPerTurn)
		if !p.FormatOK || p.Unknown > 0 || len(p.Valid) == 0 || p.Think == "" || p.Cut > 0 || strings.Contains(resp, "%!") {
			t.Errorf("seed %d: demonstration does not parse cleanly (%+v):\n%s", seed, p, resp)
		}
		if after := env.Render(); after != before {
			t.Fatalf("seed %d: Demonstrate changed the state:\n%s\n---\n%s", seed, before, after)
		}
	}
}

// expertOr is the expert policy when the environment has one, else random.
func expertOr(seed int64, imperfect bool) Policy {
	expert := ExpertPolicy(seed, imperfect)
	random := randomTyper(seed)
	return func(ep *envs.Episode) string {
		if _, ok := ep.Env.(envs.Expert); ok {
			return expert(ep)
		}
		return random(ep)
	}
}

// randomTyper answers with a random mix of action names (any case), junk
// words and broken tags.
func randomTyper(seed int64) Policy {
	rng := rand.New(rand.NewSource(seed))
	junk := []string{"jump", "", "42", "<answer>", "||", "1 + 2"}
	return func(ep *envs.Episode) string {
		n := 1 + rng.Intn(4)
		parts := make([]string, n)
		for i := range parts {
			if len(ep.Desc.Actions) > 0 && rng.Intn(3) > 0 {
				a := ep.Desc.Actions[rng.Intn(len(ep.Desc.Actions))]
				if rng.Intn(2) == 0 {
					a = strings.ToUpper(a)
				}
				parts[i] = a
			} else {
				parts[i] = junk[rng.Intn(len(junk))]
			}
		}
		answer := strings.Join(parts, " || ")
		switch rng.Intn(5) {
		case 0:
			return answer // no tags
		case 1:
			return "<think>hmm</think>" + answer + "</answer>"
		default:
			return "<think>trying</think><answer>" + answer + "</answer>"
		}
	}
}
