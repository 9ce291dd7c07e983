package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/envs"
	"github.com/ragen-go/ragen/envs/frozenlake"
)

func runPlay(t *testing.T, input string, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	err := play(args, strings.NewReader(input), &out)
	return out.String(), err
}

func mustContain(t *testing.T, out string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(out, p) {
			t.Errorf("output lacks %q:\n%s", p, out)
		}
	}
}

// Every registered environment can be played to its end; junk answers earn
// the format penalty each turn until the turn or action budget runs out.
func TestPlayEveryEnvironment(t *testing.T) {
	names := envs.Names()
	for _, want := range []string{"bandit", "countdown", "frozenlake", "sokoban", "webshop"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("%s is not registered (have %v)", want, names)
		}
	}
	junk := strings.Repeat("<think>no idea</think><answer>fly away</answer>\n", 30)
	for _, name := range names {
		out, err := runPlay(t, ":hint\n"+junk, name, "-seed", "2")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		mustContain(t, out, "--- user (turn 1) ---", "Turn 1:\nState:\n", "actions left", "=== episode over")
		if name != "countdown" && name != "webshop" {
			// Countdown and WebShop take any text as an action; the others
			// refuse "fly away" as unknown.
			mustContain(t, out, "format penalty -0.1", "1 unknown")
		}
	}
}

func TestPlayFrozenLakeScripted(t *testing.T) {
	// Find a firm-ice map whose shortest path takes at least two moves, then
	// type its first move bare, ask for a hint, and type the rest in full.
	var seed int64
	var path []string
	for seed = 0; len(path) < 2; seed++ {
		e, err := frozenlake.New(frozenlake.Config{Size: 4, P: 0.8, SuccessRate: 1,
			MaxActionsPerTurn: 5, MaxActionsPerEpisode: 10, MaxTurns: 5})
		if err != nil {
			t.Fatal(err)
		}
		e.Reset(seed)
		path = e.ShortestPath()
	}
	seed--
	rest := strings.ToLower(strings.Join(path[1:], " || "))
	out, err := runPlay(t, path[0]+"\n:hint\n<think>follow the path</think><answer>"+rest+"</answer>\n",
		"frozenlake", "-seed", fmt.Sprint(seed), "-opt", "is_slippery=false")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out,
		"(read as <think></think><answer>"+path[0]+"</answer>)",
		"--- user (turn 2) ---\nReward: 0\n\nTurn 2:",
		"You have 9 actions left.",
		"</think><answer>", // the hint
		"=== episode over: solved; return 1 in 2 turns ===",
	)
}

func TestPlayBanditAndNoThink(t *testing.T) {
	out, err := runPlay(t, "<answer> dragon </answer>\n", "bandit", "-no-think",
		"-opt", "lo_name=Phoenix", "-opt", "hi_name=Dragon", "-seed", "1")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "Answer in the form <answer> your answer </answer>", "ran: [Dragon]", "episode over: solved")
}

func TestPlayInputEndsAndQuit(t *testing.T) {
	out, err := runPlay(t, "", "countdown")
	if err != nil || !strings.Contains(out, "(input ended)") {
		t.Errorf("empty input: %v\n%s", err, out)
	}
	out, err = runPlay(t, ":quit\n", "frozenlake")
	if err != nil || strings.Contains(out, "episode over") {
		t.Errorf(":quit: %v\n%s", err, out)
	}
}

func TestPlayList(t *testing.T) {
	out, err := runPlay(t, "", "-list")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "frozenlake: ", "-opt size=4  (int)", `-opt split="train"  (string)`)
}

func TestPlayErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"chess"}, `unknown environment "chess" (registered: bandit,`},
		{[]string{"frozenlake", "-opt", "size"}, `-opt "size": want key=value`},
		{[]string{"frozenlake", "-opt", "size=big"}, `frozenlake option size: want int, got "big"`},
		{[]string{"frozenlake", "-opt", "size=1"}, "frozenlake option size: must be in [2, 32]"},
		{[]string{"frozenlake", "-opt", "colour=red"}, `frozenlake: unknown option "colour" (valid: size, p,`},
		{[]string{"frozenlake", "extra"}, `unexpected arguments ["extra"]`},
		{[]string{}, "name an environment: bandit,"},
	} {
		_, err := runPlay(t, "", c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

func TestForgiving(t *testing.T) {
	for _, c := range []struct {
		in    string
		think bool
		want  string
	}{
		{"Up || Left", true, "<think></think><answer>Up || Left</answer>"},
		{"Up", false, "<answer>Up</answer>"},
		{"<answer>Up</answer>", true, "<think></think><answer>Up</answer>"},
		{"go up</think><answer>Up</answer>", true, "<think>go up</think><answer>Up</answer>"},
		{"<think>a</think><answer>Up</answer>", true, "<think>a</think><answer>Up</answer>"},
	} {
		if got := forgiving(c.in, c.think); got != c.want {
			t.Errorf("forgiving(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestPlayArrowKeys: arrow keys reach a line-mode terminal's input as
// escape sequences; they are dropped with a word of help and cost no turn,
// and plain words ("up left", "Up, Left") are moves.
func TestPlayArrowKeys(t *testing.T) {
	out, err := runPlay(t, "\x1b[A\n\x1bOD\x1b[1;5C\n\x1b[Bup\nleft, up\n:quit\n", "sokoban", "-seed", "3")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "(arrow and other control keys are not moves"); n != 2 {
		t.Errorf("%d notes on arrow keys, want 2:\n%s", n, out)
	}
	mustContain(t, out,
		"(read as <think></think><answer>up</answer>)\n\n--- turn 1 ---\nparse: actions [up]\nran: [Up]",
		"(read as <think></think><answer>left || up</answer>)\n\n--- turn 2 ---\nparse: actions [left | up]\nran: [Left | Up]",
	)
	if strings.Contains(out, "unknown") || strings.Contains(out, "format penalty") {
		t.Errorf("a turn was charged for keys:\n%s", out)
	}
}

func TestStripControls(t *testing.T) {
	for _, c := range []struct {
		in, want string
		dropped  bool
	}{
		{"Up || Left", "Up || Left", false},
		{"\x1b[A", "", true},
		{"\x1b[1;5Dup", "up", true},
		{"\x1bOA\x1bOB", "", true},
		{"le\x1bbft", "left", true}, // Alt-b
		{"up\x7f\x08\x1b", "up", true},
		{"\x1b[", "", true},
		{"<answer>Up\tLeft</answer>", "<answer>Up\tLeft</answer>", false},
	} {
		if got, dropped := stripControls(c.in); got != c.want || dropped != c.dropped {
			t.Errorf("stripControls(%q) = %q, %v; want %q, %v", c.in, got, dropped, c.want, c.dropped)
		}
	}
}

func TestActionWords(t *testing.T) {
	moves := []string{"Up", "Down", "Left", "Right"}
	for _, c := range []struct {
		in      string
		actions []string
		want    string
	}{
		{"up", moves, "up"},
		{"up left", moves, "up || left"},
		{"Up, Left,Down", moves, "Up || Left || Down"},
		{"up; right", moves, "up || right"},
		{"up || left", moves, "up || left"},
		{"up and left", moves, "up and left"}, // not every word is a move: left for the parser to refuse
		{"<answer>up left</answer>", moves, "<answer>up left</answer>"},
		{"3 + 4", nil, "3 + 4"}, // a language environment takes the text
		{"red dragon", []string{"Red Dragon", "Blue Phoenix"}, "red dragon"},
	} {
		if got := actionWords(c.in, c.actions); got != c.want {
			t.Errorf("actionWords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
