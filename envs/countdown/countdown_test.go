package countdown

import (
	"math/big"
	"math/rand"
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

func TestContract(t *testing.T) {
	envtest.Check(t, func() envs.Env { return newEnv(t, nil) }, 0, 1, 2)
	envtest.Check(t, func() envs.Env { return newEnv(t, map[string]any{"ops": "+-*/", "max_nums": 5, "min_nums": 5}) }, 3)
}

func TestGolden(t *testing.T) {
	e := newEnv(t, nil)
	obs, _ := e.Reset(5)
	envtest.Golden(t, "render_seed5.golden", obs+"\n")
	tr, err := envtest.Transcript(newEnv(t, nil), 5, envtest.ExpertPolicy(1, false))
	if err != nil {
		t.Fatal(err)
	}
	envtest.Golden(t, "transcript_seed5.golden", tr)
	tr, err = envtest.Transcript(newEnv(t, map[string]any{"ops": "+-*/"}), 8, envtest.ExpertPolicy(3, true))
	if err != nil {
		t.Fatal(err)
	}
	envtest.Golden(t, "transcript_allops_seed8_imperfect.golden", tr)
}

func TestEval(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"2 + 5 - 3", "4"},
		{"(8 - 5) * 2 + 3", "9"},
		{"8 / 3", "8/3"},
		{"8 - 5 - 3", "0"},
		{"8 - (5 - 3)", "6"},
		{"24 / 4 / 2", "3"},
		{"3 × 4 ÷ 2 − 1", "5"},
		{"-3 + +5", "2"},
		{" ( ( 7 ) ) ", "7"},
	} {
		v, _, err := Eval(c.in)
		if err != nil || v.RatString() != c.want {
			t.Errorf("Eval(%q) = %v, %v; want %s", c.in, v, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"1 / (2 - 2)", "at byte 2: division by zero"},
		{"2 +", "at byte 3: want a number or (, got end of expression"},
		{"((1)", "at byte 4: want ), got end of expression"},
		{"2 x 3", `at byte 2: unexpected character "x"`},
		{"* 2", `at byte 0: missing number before "*"`},
		{"2 3", `at byte 2: unexpected "3"`},
		{"", "at byte 0: want a number or (, got end of expression"},
		{"1234567890123", "has more than 12 digits"},
		{strings.Repeat("(", 70) + "1" + strings.Repeat(")", 70), "nested deeper than 64 levels"},
		{strings.Repeat("1+", 501) + "1", "expression longer than 1000 bytes"},
	} {
		_, _, err := Eval(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Eval(%.20q) error %v, want %q", c.in, err, c.want)
		}
	}
	_, nums, _ := Eval("(12 - 3) * 4")
	if !slices.Equal(nums, []int64{12, 3, 4}) {
		t.Errorf("literals: %v", nums)
	}
}

func TestScore(t *testing.T) {
	nums, target := []int{3, 5, 2}, 4
	for _, c := range []struct {
		answer string
		want   float64
	}{
		{"2 + 5 - 3", 1},
		{"5 - 3 + 2", 1},       // 4 as well
		{"(5 - 3) * 2", 1},     // 4 with another operator
		{"5 + 3 + 2", 0.1},     // right numbers, 10
		{"5 + 3 2", 0.1},       // right numbers, does not parse
		{"5 / (3 - 3) + 2", 0}, // wrong numbers (two 3s)
		{"2 + 5 - 3 = 4", 0},   // "= 4" adds a number, as in RAGEN
		{"2 + 5", 0},           // a number missing
		{"", 0},
	} {
		if got, _ := Score(c.answer, nums, target); got != c.want {
			t.Errorf("Score(%q) = %v, want %v", c.answer, got, c.want)
		}
	}
	// Division by zero with the right numbers is the format score.
	if got, parses := Score("2 / (5 - 5)", []int{2, 5, 5}, 1); got != 0.1 || parses {
		t.Errorf("division by zero: %v, %v", got, parses)
	}
}

func TestReachable(t *testing.T) {
	if got := Reachable([]int{1, 2}, "+-*/", 10); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("Reachable(1, 2) = %v, want [1 2 3]", got)
	}
	if got := Reachable([]int{3, 5, 8}, "+-", 100); !slices.Equal(got, []int{6, 10, 16}) {
		t.Errorf("Reachable(3, 5, 8; +-) = %v, want [6 10 16]", got)
	}
	// 24 from 1, 3, 4, 6 needs a fraction: 6 / (1 − 3/4).
	if got := Reachable([]int{1, 3, 4, 6}, "+-*/", 30); !slices.Contains(got, 24) {
		t.Errorf("Reachable(1 3 4 6) misses 24: %v", got)
	}
}

// Every generated instance is solvable, and the solver's expression uses
// exactly the numbers and scores 1.
func TestGeneratedInstancesSolve(t *testing.T) {
	for _, ops := range []string{"+-", "+-*/"} {
		e := newEnv(t, map[string]any{"ops": ops})
		for seed := int64(0); seed < 300; seed++ {
			e.Reset(seed)
			nums, target := e.Instance()
			if len(nums) < 3 || len(nums) > 4 || target < 1 || target > 100 {
				t.Fatalf("seed %d: instance %v → %d out of range", seed, nums, target)
			}
			sol, ok := Solve(nums, target, ops, nil)
			if !ok {
				t.Fatalf("seed %d: no solution for %v → %d with %q", seed, nums, target, ops)
			}
			if r, _ := Score(sol.Expr, nums, target); r != 1 {
				t.Fatalf("seed %d: solution %q scores %v", seed, sol.Expr, r)
			}
			if ops == "+-" && strings.ContainsAny(sol.Expr, "*/") {
				t.Fatalf("seed %d: %q uses an operator outside %q", seed, sol.Expr, ops)
			}
		}
	}
	// With 1 3 4 6 → 24 the solution needs a fraction on the way.
	sol, ok := Solve([]int{1, 3, 4, 6}, 24, "+-*/", rand.New(rand.NewSource(1)))
	if !ok {
		t.Fatal("no solution for 1 3 4 6 → 24")
	}
	v, _, err := Eval(sol.Expr)
	if err != nil || v.Cmp(big.NewRat(24, 1)) != 0 {
		t.Errorf("solution %q = %v, %v", sol.Expr, v, err)
	}
	if _, ok := Solve([]int{1, 1}, 5, "+-*/", nil); ok {
		t.Error("found a solution for 1 1 → 5")
	}
}

func TestExpertAlwaysRight(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	e := newEnv(t, map[string]any{"ops": "+-*/"})
	for seed := int64(0); seed < 200; seed++ {
		e.Reset(seed)
		r := envs.RunTurn(e, e.Describe(), e.Demonstrate(rng, false), 1, envs.DefaultTurnConfig())
		if !r.Success || r.Reward != 1 {
			t.Fatalf("seed %d: expert turn %+v", seed, r)
		}
	}
}

func TestBadOptions(t *testing.T) {
	for _, c := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"max_nums": 6}, "countdown option max_nums: must be at most 5, the solver's limit (got 6)"},
		{map[string]any{"min_nums": 1}, "countdown option min_nums: must be at least 2 (got 1)"},
		{map[string]any{"min_nums": 4, "max_nums": 3}, "countdown option max_nums: must be at least min_nums = 4 (got 3)"},
		{map[string]any{"ops": "+^"}, `countdown option ops: must be a non-empty set of the operators`},
		{map[string]any{"ops": "++"}, `countdown option ops: must be a non-empty set`},
		{map[string]any{"max_number": 0}, "countdown option max_number: must be in [1, 1000] (got 0)"},
	} {
		_, err := envs.New(Name, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got error %v, want it to contain %q", c.opts, err, c.want)
		}
	}
	// Numbers up to 1 with a target above the reach of 2 ones fail clearly.
	_, err := envs.New(Name, map[string]any{"max_number": 1, "min_nums": 2, "max_nums": 2, "ops": "*", "max_target": 100})
	if err != nil {
		t.Errorf("1 * 1 = 1 is reachable: %v", err)
	}
	_, err = envs.New(Name, map[string]any{"max_number": 1, "min_nums": 2, "max_nums": 2, "ops": "-", "max_target": 100})
	if err == nil || !strings.Contains(err.Error(), "no reachable target") {
		t.Errorf("1 - 1 reaches nothing positive: %v", err)
	}
}

func FuzzEval(f *testing.F) {
	for _, s := range []string{"2 + 5 - 3", "((1)", "1/0", "3 × 4 ÷ 2", "-(-(-1))", "9999999999*9999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, nums, err := Eval(s)
		if err == nil && v == nil {
			t.Fatal("nil value without error")
		}
		if err == nil && len(nums) == 0 {
			t.Fatalf("%q evaluated without a number", s)
		}
		Score(s, []int{1, 2, 3}, 6)
	})
}

func BenchmarkReset(b *testing.B) {
	e := newEnv(b, nil)
	for i := 0; i < b.N; i++ {
		e.Reset(int64(i))
	}
}

func BenchmarkStep(b *testing.B) {
	e := newEnv(b, nil)
	e.Reset(1)
	sol, _ := Solve(e.nums, e.target, e.cfg.Ops, nil)
	for i := 0; i < b.N; i++ {
		e.done = false
		e.Step(sol.Expr)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

func BenchmarkReset5(b *testing.B) {
	e := newEnv(b, map[string]any{"ops": "+-*/", "min_nums": 5, "max_nums": 5})
	for i := 0; i < b.N; i++ {
		e.Reset(int64(i))
	}
}

func TestDeterminism(t *testing.T) {
	a, b := newEnv(t, nil), newEnv(t, nil)
	seen := map[string]bool{}
	for seed := int64(0); seed < 100; seed++ {
		a.Reset(seed + 1000)
		a.Step("1 + 2")
		a.Reset(seed)
		b.Reset(seed)
		na, ta := a.Instance()
		nb, tb := b.Instance()
		if !slices.Equal(na, nb) || ta != tb {
			t.Fatalf("seed %d: %v → %d vs %v → %d", seed, na, ta, nb, tb)
		}
		seen[a.Render()] = true
	}
	if len(seen) < 95 {
		t.Errorf("only %d different instances in 100 seeds", len(seen))
	}
}
