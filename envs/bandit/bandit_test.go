package bandit

import (
	"math"
	"math/rand"
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

func TestContract(t *testing.T) {
	envtest.Check(t, func() envs.Env { return newEnv(t, nil) }, 0, 1, 2, 3)
	envtest.Check(t, func() envs.Env { return newEnv(t, map[string]any{"split": "test"}) }, 5)
}

func TestGolden(t *testing.T) {
	e := newEnv(t, nil)
	obs, _ := e.Reset(7)
	envtest.Golden(t, "render_seed7.golden", obs+"\n")
	tr, err := envtest.Transcript(newEnv(t, nil), 7, envtest.ExpertPolicy(1, false))
	if err != nil {
		t.Fatal(err)
	}
	envtest.Golden(t, "transcript_seed7.golden", tr)
}

func TestRewards(t *testing.T) {
	const n = 4000
	var hiWins, loFirst int
	for seed := int64(0); seed < n; seed++ {
		e := newEnv(t, nil)
		e.Reset(seed)
		names := e.Names()
		if e.Arms()[0] == names.Lo {
			loFirst++
		}
		s := e.Step(names.Lo)
		if s.Reward != 0.1 || !s.Done || s.Info.Success || !s.Info.Valid {
			t.Fatalf("seed %d: low-risk arm gave %+v, want reward 0.1, done, not success", seed, s)
		}
		e.Reset(seed)
		s = e.Step(names.Hi)
		if !s.Done || !s.Info.Success {
			t.Fatalf("seed %d: high-risk arm gave %+v, want done and success", seed, s)
		}
		switch s.Reward {
		case 1:
			hiWins++
		case 0:
		default:
			t.Fatalf("seed %d: high-risk arm paid %v, want 0 or 1", seed, s.Reward)
		}
	}
	// Binomial(4000, p): allow 4 standard deviations.
	check := func(what string, k int, p float64) {
		sd := math.Sqrt(n * p * (1 - p))
		if math.Abs(float64(k)-n*p) > 4*sd {
			t.Errorf("%s: %d of %d, want about %.0f", what, k, n, n*p)
		}
	}
	check("high-risk arm wins", hiWins, 0.25)
	check("low-risk arm shown first", loFirst, 0.5)
}

func TestStepAfterDoneAndUnknown(t *testing.T) {
	e := newEnv(t, nil)
	e.Reset(3)
	if s := e.Step("Nobody"); s.Done || s.Info.Valid || s.Reward != 0 {
		t.Errorf("unknown arm: %+v, want nothing to happen", s)
	}
	e.Step(e.Names().Hi)
	if s := e.Step(e.Names().Lo); !s.Done || s.Reward != 0 || s.Info.Valid {
		t.Errorf("second pull: %+v, want done, no reward, invalid", s)
	}
}

func TestSplitsAndNames(t *testing.T) {
	inList := func(p Pair, list []Pair) bool {
		for _, q := range list {
			if p == q {
				return true
			}
		}
		return false
	}
	for seed := int64(0); seed < 50; seed++ {
		tr, te := newEnv(t, nil), newEnv(t, map[string]any{"split": "test"})
		tr.Reset(seed)
		te.Reset(seed)
		if !inList(tr.Names(), TrainPairs) || !inList(te.Names(), TestPairs) {
			t.Fatalf("seed %d: names %v (train) %v (test) not from their split", seed, tr.Names(), te.Names())
		}
	}
	e := newEnv(t, map[string]any{"lo_name": "Phoenix", "hi_name": "Dragon"})
	e.Reset(9)
	if e.Names() != (Pair{"Phoenix", "Dragon"}) {
		t.Errorf("fixed names: got %v", e.Names())
	}
	// The action names follow the episode's arms, and the parser maps any case.
	r := envs.RunTurn(e, e.Describe(), "<think>x</think><answer> dragon </answer>", 1, envs.DefaultTurnConfig())
	if len(r.Executed) != 1 || r.Executed[0] != "Dragon" || r.Penalty != 0 || !r.Success {
		t.Errorf("turn: %+v", r)
	}
}

func TestBadOptions(t *testing.T) {
	for _, c := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"hi_prob": 1.5}, "bandit option hi_prob: is a probability, must be in [0, 1] (got 1.5)"},
		{map[string]any{"split": "dev"}, `bandit option split: want one of train, test, got "dev"`},
		{map[string]any{"lo_name": "Phoenix"}, "lo_name and hi_name go together"},
		{map[string]any{"lo_name": "A B", "hi_name": "C"}, "two different words"},
		{map[string]any{"arms": 3}, `bandit: unknown option "arms" (valid: split, lo_reward`},
		{map[string]any{"lo_reward": "high"}, "bandit option lo_reward: want float, got string high"},
	} {
		_, err := envs.New(Name, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got error %v, want it to contain %q", c.opts, err, c.want)
		}
	}
}

// The expert is undecided on purpose: about half its demonstrations pull the
// high-risk arm, and the reasoning names the arm it pulls.
func TestDemonstrationsBalanced(t *testing.T) {
	e := newEnv(t, nil)
	rng := rand.New(rand.NewSource(1))
	const n = 2000
	hi := 0
	for i := 0; i < n; i++ {
		e.Reset(int64(i))
		resp := e.Demonstrate(rng, false)
		p := envs.Parse(resp, true, e.Describe().Actions, 1)
		if len(p.Valid) != 1 || !strings.Contains(p.Think, p.Valid[0]) {
			t.Fatalf("demo %q: reasoning does not name the pulled arm", resp)
		}
		if p.Valid[0] == e.Names().Hi {
			hi++
		}
	}
	if hi < n*45/100 || hi > n*55/100 {
		t.Errorf("expert pulled the high-risk arm %d of %d times, want about half", hi, n)
	}
}

func TestWords(t *testing.T) {
	if got := words("StartupFounder"); got != "startup founder" {
		t.Errorf("words: %q", got)
	}
}

func BenchmarkEpisode(b *testing.B) {
	e := newEnv(b, nil)
	for i := 0; i < b.N; i++ {
		e.Reset(int64(i))
		e.Step(e.Names().Hi)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

func TestDeterminism(t *testing.T) {
	a, b := newEnv(t, nil), newEnv(t, nil)
	for seed := int64(0); seed < 100; seed++ {
		a.Reset(seed + 1000)
		a.Step(a.Names().Hi)
		a.Reset(seed)
		b.Reset(seed)
		sa, sb := a.Step(a.Names().Hi), b.Step(b.Names().Hi)
		if a.Arms() != b.Arms() || sa.Reward != sb.Reward {
			t.Fatalf("seed %d: %v %v vs %v %v", seed, a.Arms(), sa.Reward, b.Arms(), sb.Reward)
		}
	}
}
