package sokoban

import (
	"math"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/envs"
)

// loaded returns an environment playing room.
func loaded(t *testing.T, room string) *Env {
	t.Helper()
	e, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Load(room); err != nil {
		t.Fatal(err)
	}
	return e
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestWalkAndPushRewards(t *testing.T) {
	e := loaded(t, `#######
#P_XO_#
#_____#
#######`)
	// Walk right: step penalty only, player moved.
	s := e.Step("Right")
	if !near(s.Reward, -0.1) || !s.Info.Valid || !s.Info.Effective || s.Done || s.Info.Success {
		t.Fatalf("walk: %+v", s)
	}
	// Push the box onto the target: -0.1 + 1 + 10, solved.
	s = e.Step("Right")
	if !near(s.Reward, 10.9) || !s.Done || !s.Info.Success || !s.Info.Effective {
		t.Fatalf("solving push: %+v", s)
	}
	want := "#######\n#__P√_#\n#_____#\n#######"
	if s.Observation != want || e.Render() != want {
		t.Fatalf("after solving:\n%s\nwant\n%s", s.Observation, want)
	}
	// Nothing is valid after the end.
	if s := e.Step("Left"); s.Info.Valid || !s.Done || s.Reward != 0 || e.Render() != want {
		t.Fatalf("step after done: %+v", s)
	}
}

func TestPushOffTargetAndBlocked(t *testing.T) {
	e := loaded(t, `#######
#_P√_O#
#___X_#
#######`)
	// Pushing the box off its target costs 1 (plus the step).
	s := e.Step("right")
	if !near(s.Reward, -1.1) || !s.Info.Effective || s.Done {
		t.Fatalf("push off target: %+v", s)
	}
	if got := e.Render(); got != "#######\n#__SXO#\n#___X_#\n#######" {
		t.Fatalf("player on target renders S:\n%s", got)
	}
	// Pushing it on onto the other target earns 1.
	s = e.Step("Right")
	if !near(s.Reward, 0.9) || s.Done || s.Info.Metrics["boxes_on_target"] != 1 {
		t.Fatalf("push onto target: %+v", s)
	}
	// Pushing a box into the wall does nothing but still costs a step.
	s = e.Step("Right")
	if !near(s.Reward, -0.1) || s.Info.Effective || !s.Info.Valid {
		t.Fatalf("push into wall: %+v", s)
	}
	// Walking into a wall.
	s = e.Step("Up")
	if !near(s.Reward, -0.1) || s.Info.Effective {
		t.Fatalf("walk into wall: %+v", s)
	}
}

func TestTwoBoxesCannotBePushed(t *testing.T) {
	e := loaded(t, `#######
#PXX_O#
#____O#
#######`)
	before := e.Render()
	if s := e.Step("Right"); s.Info.Effective || e.Render() != before {
		t.Fatalf("pushed two boxes: %+v\n%s", s, e.Render())
	}
}

func TestInvalidActionChangesNothing(t *testing.T) {
	e := loaded(t, "#####\n#PXO#\n#####")
	for _, a := range []string{"", "jump", "Upp", "Up Up"} {
		s := e.Step(a)
		if s.Info.Valid || s.Info.Effective || s.Reward != 0 || s.Done {
			t.Fatalf("action %q: %+v", a, s)
		}
	}
	if e.steps != 0 {
		t.Fatalf("invalid actions counted as steps: %d", e.steps)
	}
}

func TestMaxStepsEndsEpisode(t *testing.T) {
	c := DefaultConfig()
	c.MaxSteps = 3
	e, _ := New(c)
	if err := e.Load("######\n#P_XO#\n#____#\n######"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		s := e.Step("Down")
		if s.Done != (i == 3) || s.Info.Success {
			t.Fatalf("step %d: %+v", i, s)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	e, _ := New(DefaultConfig())
	for room, want := range map[string]string{
		"####\n#P_#\n####":           "targets as boxes",
		"#####\n#PXO#\n#XO_#\n#####": "", // valid: two boxes, two targets
		"#####\n#PXO#\n#PO_#\n#####": "exactly one player",
		"#####\n#PXO_\n#####":        "border must be wall",
		"#####\n#PXO#\n####":         "row 3 has 4 cells",
		"#####\n#PXa#\n#####":        "unknown symbol",
		"##\n##":                     "at least 3x3",
	} {
		err := e.Load(room)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", room, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to mention %q", room, err, want)
		}
	}
}

func TestOptions(t *testing.T) {
	for _, c := range []struct {
		opts map[string]any
		want string // "" = no error
	}{
		{map[string]any{}, ""},
		{map[string]any{"dim": 8, "boxes": 2, "search_depth": 10}, ""},
		{map[string]any{"rows": 5, "cols": 9}, ""},
		{map[string]any{"dim": 2}, "sokoban option dim: must be in [3, 32] (got 2)"},
		{map[string]any{"dim": 4, "boxes": 3}, "sokoban option boxes: 3 boxes do not fit in a 4x4 room"},
		{map[string]any{"boxes": 0}, "sokoban option boxes: must be >= 1 (got 0)"},
		{map[string]any{"search_depth": 1}, "sokoban option search_depth: must be >= 2"},
		{map[string]any{"max_turns": 0}, "sokoban option max_turns"},
		{map[string]any{"size": 6}, `unknown option "size"`},
	} {
		env, err := envs.New(Name, c.opts)
		if c.want == "" {
			if err != nil {
				t.Errorf("%v: %v", c.opts, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.opts, err, c.want)
		}
		if env != nil {
			t.Errorf("%v: got an environment with an error", c.opts)
		}
	}
	env, err := envs.New(Name, map[string]any{"rows": 5, "cols": 9, "boxes": 2})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := env.Reset(4)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(obs, "\n")
	if len(lines) != 5 || len([]rune(lines[0])) != 9 {
		t.Fatalf("5x9 room rendered as\n%s", obs)
	}
	d := env.Describe()
	if d.MaxActionsPerTurn != 5 || d.MaxActionsPerEpisode != 10 || d.MaxTurns != 5 || len(d.Actions) != 4 || len(d.Legend) != 7 {
		t.Fatalf("description %+v", d)
	}
}

// FuzzLoad: Load never panics; a room it accepts renders back as given.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{"#####\n#PXO#\n#####", "######\n#S_X_#\n#√XO_#\n######\n", "", "#", "√√√\n√P√\n√√√", "##\n#P#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, room string) {
		e, _ := New(DefaultConfig())
		if err := e.Load(room); err != nil {
			return
		}
		if got := e.Render(); got != strings.TrimRight(room, "\n") {
			t.Fatalf("loaded\n%q\nrenders as\n%q", room, got)
		}
		e.Solve(1000)
		e.Step("Up")
	})
}
