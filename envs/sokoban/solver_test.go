package sokoban

import (
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/envs"
	"github.com/ragen-go/ragen/envs/envtest"
)

func TestSolveHandLevels(t *testing.T) {
	for _, c := range []struct {
		room string
		want []string // nil: unsolvable
	}{
		{"#######\n#P_XO_#\n#_____#\n#######", []string{"Right", "Right"}},
		{"######\n#_X_O#\n#P___#\n######", []string{"Up", "Right", "Right"}},
		{"#####\n#P√_#\n#####", []string{}},
		{"#####\n#X__#\n#_PO#\n#####", nil},     // box in a corner
		{"######\n#PXXO#\n#___O#\n######", nil}, // boxes in a row against the wall
		{"#######\n#P____#\n#_X_X_#\n#_O_O_#\n#######", []string{"Right", "Down", "Up", "Right", "Right", "Down"}},
	} {
		e := loaded(t, c.room)
		got, ok := e.Solve(0)
		if c.want == nil {
			if ok {
				t.Errorf("unsolvable room solved with %v:\n%s", got, c.room)
			}
			continue
		}
		if !ok || len(got) != len(c.want) {
			t.Errorf("room\n%s\nsolved %v with %v, want %v", c.room, ok, got, c.want)
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("room\n%s\nsolution %v, want %v", c.room, got, c.want)
		}
	}
}

func TestSolveNodeLimit(t *testing.T) {
	e := loaded(t, "########\n#P_____#\n#____X_#\n#_____O#\n########")
	if _, ok := e.Solve(3); ok {
		t.Fatal("solved within 3 nodes")
	}
	if _, ok := e.Solve(0); !ok {
		t.Fatal("not solved with the default limit")
	}
}

// naiveShortest is the test oracle: breadth-first search over rendered
// states using Step on copies, so it shares neither the solver's state
// encoding nor its move code.
func naiveShortest(e *Env, maxDepth int) int {
	type node struct {
		env   *Env
		depth int
	}
	seen := map[string]bool{e.Render(): true}
	queue := []node{{e.clone(), 0}}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n.depth >= maxDepth {
			continue
		}
		for _, a := range Actions {
			c := n.env.clone()
			c.cfg.MaxSteps = 1 << 30
			s := c.Step(a)
			if s.Info.Success {
				return n.depth + 1
			}
			if !seen[s.Observation] {
				seen[s.Observation] = true
				queue = append(queue, node{c, n.depth + 1})
			}
		}
	}
	return -1
}

func TestSolverMatchesNaiveOracle(t *testing.T) {
	for _, shape := range [][3]int{{6, 6, 1}, {7, 7, 2}} {
		e := newEnv(t, shape[0], shape[1], shape[2])
		for seed := int64(0); seed < 60; seed++ {
			e.Reset(seed)
			plan, ok := e.Solve(0)
			if want := naiveShortest(e, 40); !ok || len(plan) != want {
				t.Fatalf("%v seed %d: solver %v (len %d), oracle %d:\n%s", shape, seed, ok, len(plan), want, e.Render())
			}
		}
	}
}

func TestDemonstrationReasoning(t *testing.T) {
	e := loaded(t, "#######\n#PX_O_#\n#_____#\n#######")
	rng := rand.New(rand.NewSource(1))
	seen := map[string]bool{}
	for i := 0; i < 60; i++ {
		d := e.Demonstrate(rng, false)
		p := envs.Parse(d, true, Actions, 5)
		if !slices.Equal(p.Valid, []string{"Right", "Right"}) {
			t.Fatalf("answer %v, want [Right Right]: %s", p.Valid, d)
		}
		if !strings.Contains(p.Think, "two columns left of") && !strings.Contains(p.Think, "two columns right of the box") {
			t.Errorf("reasoning misplaces box and target: %s", p.Think)
		}
		if !strings.Contains(p.Think, "one column left of the box") {
			t.Errorf("reasoning misplaces the player: %s", p.Think)
		}
		if !strings.Contains(p.Think, "right twice") || !strings.Contains(p.Think, "push") {
			t.Errorf("reasoning does not describe two pushes right: %s", p.Think)
		}
		seen[p.Think] = true
	}
	if len(seen) < 10 {
		t.Errorf("only %d phrasings in 60 demonstrations", len(seen))
	}

	// A walk before the push, and an answer cut at the per-turn limit.
	e = loaded(t, "########\n#P_____#\n#__X___#\n#_____O#\n########")
	plan, _ := e.Solve(0)
	d := e.Demonstrate(rng, false)
	p := envs.Parse(d, true, Actions, 5)
	if !slices.Equal(p.Valid, plan[:5]) || !strings.Contains(p.Think, "next turn") {
		t.Fatalf("plan %v, demonstration %s", plan, d)
	}
	if !strings.Contains(p.Think, "one row above and three columns left of") && !strings.Contains(p.Think, "one row below and three columns right of the box") {
		t.Errorf("reasoning misplaces box and target: %s", p.Think)
	}

	// An unsolvable room says so.
	e = loaded(t, "#####\n#X__#\n#_PO#\n#####")
	if d := e.Demonstrate(rng, false); !strings.Contains(d, "cannot be solved") && !strings.Contains(d, "No sequence") {
		t.Errorf("stuck room: %s", d)
	}
}

// TestExpertSolvesWithinBudget plays whole episodes through the shared turn
// runner, with the grid and with the coordinate reasoning: the perfect
// expert solves exactly the levels whose shortest solution fits the
// 10-action budget; the imperfect one solves fewer.
func TestExpertSolvesWithinBudget(t *testing.T) {
	for _, format := range []string{"grid", "coord"} {
		t.Run(format, func(t *testing.T) { expertSolvesWithinBudget(t, format) })
	}
}

func expertSolvesWithinBudget(t *testing.T, format string) {
	const n = 300
	fits, perfect, imperfect := 0, 0, 0
	env := func() *Env {
		e := newEnv(t, 6, 6, 1)
		e.cfg.Format = format
		return e
	}
	probe := env()
	for seed := int64(0); seed < n; seed++ {
		probe.Reset(seed)
		plan, _ := probe.Solve(0)
		if len(plan) <= probe.cfg.MaxActionsPerEpisode {
			fits++
		}
		for _, im := range []bool{false, true} {
			ep, err := envs.Start(env(), seed, envs.DefaultTurnConfig())
			if err != nil {
				t.Fatal(err)
			}
			policy := envtest.ExpertPolicy(seed, im)
			for !ep.Done {
				r, _ := ep.Step(policy(ep))
				if r.Penalty != 0 {
					t.Fatalf("seed %d: expert answer earned the format penalty: %+v", seed, r.Parsed)
				}
			}
			if ep.Success && !im {
				perfect++
			} else if ep.Success {
				imperfect++
			}
		}
	}
	if perfect != fits {
		t.Errorf("expert solved %d of %d levels; %d fit the budget", perfect, n, fits)
	}
	if float64(fits) < 0.95*n {
		t.Errorf("only %d of %d levels fit the 10-action budget", fits, n)
	}
	if imperfect >= perfect || imperfect < n/10 {
		t.Errorf("imperfect expert solved %d (perfect %d): want fewer, but not hopeless", imperfect, perfect)
	}
	t.Logf("perfect %d/%d (fit %d), imperfect %d/%d", perfect, n, fits, imperfect, n)
}
