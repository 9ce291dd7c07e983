package frozenlake

import (
	"fmt"
	"math"
	"math/rand"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/envs"
	"github.com/ragen-go/ragen/envs/envtest"
)

func newEnv(t testing.TB, opts map[string]any) *Env {
	t.Helper()
	e, err := envs.New(Name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e.(*Env)
}

func firm() Config { c := DefaultConfig(); c.Slippery = false; return c }

func fromMap(t *testing.T, c Config, rows ...string) *Env {
	t.Helper()
	e, err := FromMap(c, rows...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestContract(t *testing.T) {
	envtest.Check(t, func() envs.Env { return newEnv(t, nil) }, 0, 1, 2)
	envtest.Check(t, func() envs.Env { return newEnv(t, map[string]any{"is_slippery": false, "size": 6}) }, 3, 4)
	envtest.Check(t, func() envs.Env { return newEnv(t, map[string]any{"observation_format": "grid_coord"}) }, 5)
}

func TestGolden(t *testing.T) {
	e := newEnv(t, nil)
	obs, _ := e.Reset(3)
	envtest.Golden(t, "render_seed3.golden", obs+"\n"+strings.Join(e.Map(), "\n")+"\n")
	for _, f := range []string{"coord", "grid_coord"} {
		e := newEnv(t, map[string]any{"observation_format": f})
		obs, _ := e.Reset(3)
		envtest.Golden(t, "render_seed3_"+f+".golden", envs.Intro(e.Describe())+"\n\n"+obs+"\n")
	}
	tr, err := envtest.Transcript(newEnv(t, nil), 3, envtest.ExpertPolicy(1, false))
	if err != nil {
		t.Fatal(err)
	}
	envtest.Golden(t, "transcript_seed3.golden", tr)
	tr, err = envtest.Transcript(newEnv(t, map[string]any{"is_slippery": false, "size": 6, "p": 0.7}), 11, envtest.ExpertPolicy(2, false))
	if err != nil {
		t.Fatal(err)
	}
	envtest.Golden(t, "transcript_firm6_seed11.golden", tr)
}

var lake = []string{
	"SFFH",
	"FHFF",
	"FFFH",
	"HFFG",
}

func step(t *testing.T, e *Env, a string) envs.StepResult {
	t.Helper()
	return e.Step(a)
}

func TestDynamicsByHand(t *testing.T) {
	e := fromMap(t, firm(), lake...)
	if got, want := e.Render(), "P__O\n_O__\n___O\nO__G"; got != want {
		t.Fatalf("render:\n%s\nwant\n%s", got, want)
	}
	// The border: Up and Left from the top-left corner stay in place.
	for _, a := range []string{"Up", "Left"} {
		if s := step(t, e, a); s.Done || s.Reward != 0 || s.Info.Effective || !s.Info.Valid {
			t.Errorf("%s into the border: %+v", a, s)
		}
	}
	for i, a := range []string{"Down", "Down", "Right", "Right", "Down"} {
		if s := step(t, e, a); s.Done || s.Reward != 0 || !s.Info.Effective {
			t.Fatalf("move %d (%s): %+v", i, a, s)
		}
	}
	s := step(t, e, "Right")
	if !s.Done || s.Reward != 1 || !s.Info.Success {
		t.Fatalf("onto the goal: %+v", s)
	}
	if got, want := e.Render(), "___O\n_O__\n___O\nO__√"; got != want {
		t.Errorf("render on goal:\n%s", got)
	}
	if s := step(t, e, "Left"); !s.Done || s.Reward != 0 || s.Info.Valid {
		t.Errorf("a move after the end: %+v", s)
	}

	e.Reset(0)
	step(t, e, "Right")
	s = step(t, e, "Down")
	if !s.Done || s.Reward != 0 || s.Info.Success {
		t.Fatalf("into a hole: %+v", s)
	}
	if got, want := e.Render(), "___O\n_X__\n___O\nO__G"; got != want {
		t.Errorf("render in hole:\n%s", got)
	}
	if p := e.ShortestPath(); p != nil {
		t.Errorf("path from a hole: %v", p)
	}
	e.Reset(0)
	if got := strings.Join(e.ShortestPath(), " "); got != "Down Down Right Down Right Right" {
		t.Errorf("shortest path: %s", got)
	}
}

// Slipping follows gymnasium: intended with success_rate, each perpendicular
// direction with (1−success_rate)/2, never backwards.
func TestSlipDistribution(t *testing.T) {
	open := []string{"FFFFF", "FFFFF", "FFSFF", "FFFFF", "FFFFG"}
	for _, rate := range []float64{1.0 / 3, 0.8} {
		c := DefaultConfig()
		c.SuccessRate = rate
		e := fromMap(t, c, open...)
		const n = 6000
		got := map[[2]int]int{}
		for seed := int64(0); seed < n; seed++ {
			e.Reset(seed)
			e.Step("Down")
			r, col := e.Position()
			got[[2]int{r, col}]++
		}
		want := map[[2]int]float64{{3, 2}: rate, {2, 1}: (1 - rate) / 2, {2, 3}: (1 - rate) / 2}
		for pos, k := range got {
			p, ok := want[pos]
			if !ok {
				t.Fatalf("rate %v: Down from the centre reached %v", rate, pos)
			}
			if sd := math.Sqrt(n * p * (1 - p)); math.Abs(float64(k)-n*p) > 4*sd {
				t.Errorf("rate %v: reached %v %d times of %d, want about %.0f", rate, pos, k, n, n*p)
			}
		}
	}
	// success_rate 1 is deterministic, also with is_slippery on.
	c := DefaultConfig()
	c.SuccessRate = 1
	e := fromMap(t, c, open...)
	for seed := int64(0); seed < 100; seed++ {
		e.Reset(seed)
		e.Step("Down")
		if r, col := e.Position(); r != 3 || col != 2 {
			t.Fatalf("success_rate 1 slipped to (%d, %d)", r, col)
		}
	}
}

func TestGeneratedMaps(t *testing.T) {
	for _, opts := range []map[string]any{nil, {"size": 8, "p": 0.6}, {"size": 2}, {"p": 1.0}} {
		e := newEnv(t, opts)
		for seed := int64(0); seed < 200; seed++ {
			if _, err := e.Reset(seed); err != nil {
				t.Fatal(err)
			}
			m := e.Map()
			if strings.Count(strings.Join(m, ""), "S") != 1 || strings.Count(strings.Join(m, ""), "G") != 1 {
				t.Fatalf("%v seed %d: map %v needs one S and one G", opts, seed, m)
			}
			if e.ShortestPath() == nil {
				t.Fatalf("%v seed %d: no path on %v", opts, seed, m)
			}
			if opts["p"] == 1.0 && strings.Contains(strings.Join(m, ""), "H") {
				t.Fatalf("p = 1 drew a hole: %v", m)
			}
		}
	}
}

// On firm ice the expert reaches the goal whenever its shortest path fits
// the action budget.
func TestExpertSolvesFirmIce(t *testing.T) {
	solved, fits := 0, 0
	for seed := int64(0); seed < 300; seed++ {
		e := newEnv(t, map[string]any{"is_slippery": false})
		e.Reset(seed)
		fit := len(e.ShortestPath()) <= e.cfg.MaxActionsPerEpisode
		ep, _ := envs.Start(e, seed, envs.DefaultTurnConfig())
		policy := envtest.ExpertPolicy(seed, false)
		for !ep.Done {
			ep.Step(policy(ep))
		}
		if fit != ep.Success {
			t.Errorf("seed %d: path fits budget %v, solved %v", seed, fit, ep.Success)
		}
		if fit {
			fits++
		}
		if ep.Success {
			solved++
		}
	}
	t.Logf("expert solved %d of 300 firm maps", solved)
}

func TestBadOptions(t *testing.T) {
	for _, c := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"size": 1}, "frozenlake option size: must be in [2, 32]: a start and a goal need two tiles (got 1)"},
		{map[string]any{"p": 0.0}, "frozenlake option p: is the probability of a frozen tile, must be in (0, 1] (got 0)"},
		{map[string]any{"success_rate": 1.2}, "frozenlake option success_rate: is a probability"},
		{map[string]any{"max_actions_per_turn": 0}, "frozenlake option max_actions_per_turn: must be at least 1 (got 0)"},
		{map[string]any{"size": 4.5}, "frozenlake option size: want an integer, got 4.5"},
		{map[string]any{"is_slippery": "no"}, "frozenlake option is_slippery: want bool, got string no"},
		{map[string]any{"observation_format": "ascii"}, `frozenlake option observation_format: want one of grid, coord, grid_coord, got "ascii"`},
	} {
		_, err := envs.New(Name, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got error %v, want it to contain %q", c.opts, err, c.want)
		}
	}
	if _, err := FromMap(firm(), "SF", "FF"); err == nil || !strings.Contains(err.Error(), "one S and one G") {
		t.Errorf("map without goal: %v", err)
	}
	if _, err := FromMap(firm(), "SG", "FFF"); err == nil || !strings.Contains(err.Error(), "square") {
		t.Errorf("ragged map: %v", err)
	}
	if e, err := envs.New(Name, map[string]any{"size": 6.0}); err != nil || e.(*Env).cfg.Size != 6 {
		t.Errorf("an integral float for an int option: %v", err)
	}
}

func TestRelative(t *testing.T) {
	for _, c := range []struct {
		dr, dc int
		want   string
	}{
		{2, 1, "two rows down and one column to the right"},
		{0, -3, "three columns to the left, in my row"},
		{-1, 0, "one row up, in my column"},
	} {
		if got := relative(c.dr, c.dc); got != c.want {
			t.Errorf("relative(%d, %d) = %q, want %q", c.dr, c.dc, got, c.want)
		}
	}
}

// TestExplainOneAxisAtATime: on coordinates the expert's reasoning copies
// both positions and then states each axis's difference from the two
// digits it names; the words agree with the moves it takes.
func TestExplainOneAxisAtATime(t *testing.T) {
	for seed := int64(0); seed < 50; seed++ {
		e := newEnv(t, map[string]any{"is_slippery": false, "observation_format": "coord"})
		e.Reset(seed)
		if e.ShortestPath() == nil {
			continue
		}
		g := e.goalAt()
		think := e.Demonstrate(rand.New(rand.NewSource(seed)), false)
		want := fmt.Sprintf("(%d, %d)", e.pos[0], e.pos[1])
		if !strings.Contains(think, want) || !strings.Contains(think, fmt.Sprintf("(%d, %d).", g[0], g[1])) {
			t.Errorf("seed %d: %q does not copy the positions %s and (%d, %d)", seed, think, want, g[0], g[1])
		}
		rows := fmt.Sprintf("Row %d to %d: %s.", e.pos[0], g[0], axisMove(g[0]-e.pos[0], "up", "down", "same row"))
		cols := fmt.Sprintf("Column %d to %d: %s.", e.pos[1], g[1], axisMove(g[1]-e.pos[1], "left", "right", "same column"))
		if !strings.Contains(think, rows) || !strings.Contains(think, cols) {
			t.Errorf("seed %d: %q lacks %q or %q", seed, think, rows, cols)
		}
	}
	for _, c := range []struct {
		d    int
		want string
	}{{-2, "two up"}, {3, "three down"}, {0, "same row"}, {12, "12 down"}} {
		if got := axisMove(c.d, "up", "down", "same row"); got != c.want {
			t.Errorf("axisMove(%d) = %q, want %q", c.d, got, c.want)
		}
	}
}

func BenchmarkStep(b *testing.B) {
	e := newEnv(b, nil)
	e.Reset(1)
	for i := 0; i < b.N; i++ {
		if s := e.Step(Actions[i%4]); s.Done {
			e.Reset(int64(i))
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

func BenchmarkReset(b *testing.B) {
	e := newEnv(b, nil)
	for i := 0; i < b.N; i++ {
		e.Reset(int64(i))
	}
}

// The same seed gives the same map on a fresh instance, whatever was played
// before; different seeds give different maps.
func TestDeterminism(t *testing.T) {
	a, b := newEnv(t, nil), newEnv(t, nil)
	maps := map[string]bool{}
	for seed := int64(0); seed < 100; seed++ {
		a.Reset(seed + 1000)
		a.Step("Down")
		a.Reset(seed)
		b.Reset(seed)
		ma, mb := strings.Join(a.Map(), "/"), strings.Join(b.Map(), "/")
		if ma != mb {
			t.Fatalf("seed %d: %s vs %s", seed, ma, mb)
		}
		maps[ma] = true
	}
	if len(maps) < 90 {
		t.Errorf("only %d different maps in 100 seeds", len(maps))
	}
}

// TestTraceWalksAShortestPath: on firm ice with coordinates the expert
// narrates a shortest path tile by tile; every tile it names is the one the
// move reaches, every move it turns down lands in a hole, and the moves in
// its answer walk that path without falling in.
func TestTraceWalksAShortestPath(t *testing.T) {
	step := regexp.MustCompile(`(Left|Down|Right|Up) to \((\d), (\d)\)( is a hole)?\.`)
	holes := 0
	for seed := int64(0); seed < 300; seed++ {
		e := newEnv(t, map[string]any{"is_slippery": false, "observation_format": "coord", "p": 0.7})
		e.Reset(seed)
		shortest := e.ShortestPath()
		if shortest == nil {
			continue
		}
		demo := e.Demonstrate(rand.New(rand.NewSource(seed)), false)
		path, _ := e.tracedPath()
		if len(path) != len(shortest) {
			t.Fatalf("seed %d: traced path %v, shortest %v", seed, path, shortest)
		}
		at := e.pos
		for _, m := range step.FindAllStringSubmatch(demo, -1) {
			a := slices.Index(Actions, m[1])
			r, c := at[0]+moves[a][0], at[1]+moves[a][1]
			if want := fmt.Sprintf("(%d, %d)", r, c); want != fmt.Sprintf("(%s, %s)", m[2], m[3]) {
				t.Fatalf("seed %d: %q names the wrong tile, want %s\n%s", seed, m[0], want, demo)
			}
			if m[4] != "" {
				holes++
				if e.grid[r][c] != hole {
					t.Fatalf("seed %d: %q: no hole there\n%s", seed, m[0], demo)
				}
				continue
			}
			at = [2]int{r, c}
		}
		answer := demo[strings.Index(demo, "<answer>")+len("<answer>") : strings.Index(demo, "</answer>")]
		for _, a := range strings.Split(answer, " || ") {
			res := e.Step(a)
			if e.grid[e.pos[0]][e.pos[1]] == hole {
				t.Fatalf("seed %d: the answer %q falls into a hole\n%s", seed, answer, demo)
			}
			if res.Done {
				break
			}
		}
		if len(shortest) <= e.cfg.MaxActionsPerTurn && e.pos != e.goalAt() {
			t.Fatalf("seed %d: the answer %q stops at %v short of the goal\n%s", seed, answer, e.pos, demo)
		}
	}
	if holes == 0 {
		t.Error("no demonstration turned down a move into a hole")
	}
}
