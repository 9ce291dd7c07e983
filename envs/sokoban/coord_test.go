package sokoban

import (
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/envs"
	"github.com/ragen-go/ragen/envs/envtest"
)

// withFormat returns a copy of e that renders in format.
func withFormat(e *Env, format string) *Env {
	c := e.clone()
	c.cfg.Format = format
	return c
}

func TestCoordinateObservation(t *testing.T) {
	e := loaded(t, "######\n#_#__#\n#_X_S#\n#__√_#\n#____#\n######")
	coord := "Board: 6 rows x 6 columns, walled all around\n" +
		"Walls: (1, 2)\n" +
		"Boxes: (2, 2)\n" +
		"Boxes on target: (3, 3)\n" +
		"Player on target: (2, 4)"
	if got := withFormat(e, "coord").Render(); got != coord {
		t.Errorf("coord:\n%s\nwant\n%s", got, coord)
	}
	grid := e.Render()
	if got, want := withFormat(e, "grid_coord").Render(), "Positions:\n"+coord+"\nGrid:\n"+grid; got != want {
		t.Errorf("grid_coord:\n%s\nwant\n%s", got, want)
	}
	// Moving off the target puts the target back in the list.
	c := withFormat(e, "coord")
	c.Step("Up")
	if got := c.Render(); !strings.Contains(got, "Targets: (2, 4)\n") || !strings.HasSuffix(got, "\nPlayer: (1, 4)") {
		t.Errorf("after Up:\n%s", got)
	}

	for _, f := range []struct {
		format string
		legend int
		coords bool
	}{{"grid", 7, false}, {"coord", 0, true}, {"grid_coord", 7, true}} {
		d := withFormat(e, f.format).Describe()
		if len(d.Legend) != f.legend {
			t.Errorf("%s: legend of %d symbols, want %d", f.format, len(d.Legend), f.legend)
		}
		if got := strings.Contains(d.Instruction, "Positions are (row, column)"); got != f.coords {
			t.Errorf("%s: instruction states the coordinate convention: %v, want %v", f.format, got, f.coords)
		}
	}

	if _, err := envs.New(Name, map[string]any{"observation_format": "coords"}); err == nil || !strings.Contains(err.Error(), "observation_format") {
		t.Errorf("bad format: %v", err)
	}
}

// TestTraceFollowsThePlan: on coordinates the expert answers the solver's
// moves and writes every cell they reach; a step it writes is the previous
// one plus one move.
func TestTraceFollowsThePlan(t *testing.T) {
	e := withFormat(loaded(t, "######\n#___##\n#_X###\n#PO###\n#___##\n######"), "coord")
	rng := rand.New(rand.NewSource(1))
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		p := envs.Parse(e.Demonstrate(rng, false), true, Actions, 5)
		if !slices.Equal(p.Valid, []string{"Up", "Up", "Right", "Down"}) {
			t.Fatalf("answer %v: %s", p.Valid, p.Think)
		}
		for _, want := range []string{"(2, 2)", "(3, 2): the target is one row below the box.", "I push it Down from (1, 2).",
			"Me (3, 1). Up to (2, 1). Up to (1, 1). Right to (1, 2). Down to (2, 2), the box to (3, 2)."} {
			if !strings.Contains(p.Think, want) {
				t.Errorf("reasoning lacks %q: %s", want, p.Think)
			}
		}
		seen[p.Think] = true
	}
	if len(seen) < 4 {
		t.Errorf("only %d phrasings", len(seen))
	}
	// A blocked move says so; the imperfect expert traces what it plays.
	if got := withFormat(loaded(t, "#####\n#P#_#\n#XO_#\n#####"), "coord").trace([]int{3, 1}); got != "Me (1, 1). Right is blocked. Down is blocked." {
		t.Errorf("blocked trace: %q", got)
	}
	for i := 0; i < 20; i++ {
		d := e.Demonstrate(rng, true)
		p := envs.Parse(d, true, Actions, 5)
		moves := make([]int, len(p.Valid))
		for k, a := range p.Valid {
			moves[k] = actionIndex(a)
		}
		if !strings.HasSuffix(p.Think, e.trace(moves)) {
			t.Errorf("imperfect reasoning does not trace its answer %v: %s", p.Valid, p.Think)
		}
	}
}

func TestCoordTranscriptGolden(t *testing.T) {
	e := newEnv(t, 6, 6, 1)
	e.cfg.Format = "coord"
	got, err := envtest.Transcript(e, 3, envtest.ExpertPolicy(7, false))
	if err != nil {
		t.Fatal(err)
	}
	envtest.Golden(t, "transcript_coord.golden", got)
}
