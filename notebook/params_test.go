package notebook

import (
	"reflect"
	"strings"
	"testing"
)

const paramsCell = `import (
	"fmt"
	"time"
)

steps := 30 // RL steps
var (
	lr      = 1e-3
	name    = "bandit"
	verbose bool
)
var seed int64 = 7
const version = 2
budget := 5 * time.Second
scale := float32(0.5)
algo := fmt.Sprint("x")`

func TestDeclaredParams(t *testing.T) {
	got, err := DeclaredParams(paramsCell)
	if err != nil {
		t.Fatal(err)
	}
	want := []Param{
		{"steps", "int", "30", false}, {"lr", "float64", "1e-3", false}, {"name", "string", `"bandit"`, false},
		{"verbose", "bool", "", false}, {"seed", "int64", "7", false}, {"version", "int", "2", true}, {"budget", "time.Duration", "5 * time.Second", false},
		{"scale", "float32", "float32(0.5)", false}, {"algo", "", `fmt.Sprint("x")`, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func paramsNotebook() *Notebook {
	return &Notebook{NBFormat: 4, Cells: []*Cell{
		{Type: "markdown", Source: "# T", Metadata: map[string]any{}},
		{Type: "code", Source: paramsCell, Metadata: map[string]any{"tags": []any{"parameters"}}},
		{Type: "code", Source: "// stale", Metadata: map[string]any{"tags": []any{"injected-parameters"}}},
		{Type: "code", Source: "fmt.Println(steps)", Metadata: map[string]any{}},
	}}
}

func TestInjectParams(t *testing.T) {
	nb := paramsNotebook()
	err := nb.InjectParams([]string{"steps=5", "lr=0.01", "name=grid world", "verbose=true", "seed=0x10", "budget=1m30s", "scale=2", "steps=6"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nb.Cells) != 4 {
		t.Fatalf("%d cells, want 4: the stale injected cell must be replaced", len(nb.Cells))
	}
	c := nb.Cells[2]
	want := "// Parameters injected by ragen-run\nsteps = 6\nlr = 0.01\nname = \"grid world\"\nverbose = true\nseed = 0x10\nbudget = time.Duration(90000000000) // 1m30s\nscale = 2"
	if c.Source != want || !c.HasTag(TagInjectedParameters) || c.ID == "" {
		t.Errorf("injected cell %q tags %v:\n%s\nwant\n%s", c.ID, c.Tags(), c.Source, want)
	}
	if nb.Cells[3].Source != "fmt.Println(steps)" {
		t.Errorf("cell after the injected one is %q", nb.Cells[3].Source)
	}
	// A quoted string is taken as a Go literal.
	if err := nb.InjectParams([]string{`name="a\tb"`}); err != nil || nb.Cells[2].Source != "// Parameters injected by ragen-run\nname = \"a\\tb\"" {
		t.Errorf("quoted string: %v %q", err, nb.Cells[2].Source)
	}
}

func TestInjectParamsErrors(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"stepz=5", `-p stepz=5: "stepz" is not declared in the parameters cell (it declares: algo, budget, lr, name, scale, seed, steps, verbose, version)`},
		{"steps=abc", `-p steps=abc: steps is declared as int in the parameters cell (default 30); "abc" is not an integer of type int`},
		{"steps=1.5", `-p steps=1.5: steps is declared as int in the parameters cell (default 30); "1.5" is not an integer of type int`},
		{"lr=fast", `-p lr=fast: lr is declared as float64 in the parameters cell (default 1e-3); "fast" is not a number`},
		{"verbose=1", `-p verbose=1: verbose is declared as bool in the parameters cell; "1" is not a bool (true or false)`},
		{"budget=5", `-p budget=5: budget is declared as time.Duration in the parameters cell (default 5 * time.Second); "5" is not a duration (like 5s, 1m30s, 200ms)`},
		{"version=3", `-p version=3: version is a constant in the parameters cell and cannot be reassigned; declare it with var or :=`},
		{"seed=99999999999999999999", `-p seed=99999999999999999999: seed is declared as int64 in the parameters cell (default 7); "99999999999999999999" is not an integer of type int64`},
		{"algo=grpo", `-p algo=grpo: algo is declared as an unknown type in the parameters cell (default fmt.Sprint("x")); only int, float, bool, string and time.Duration parameters can be set from the command line`},
		{"steps", `-p steps: want name=value`},
	} {
		err := paramsNotebook().InjectParams([]string{tc.arg})
		if err == nil || err.Error() != tc.want {
			t.Errorf("-p %s:\ngot  %v\nwant %s", tc.arg, err, tc.want)
		}
	}
	nb := paramsNotebook()
	nb.Cells[1].Metadata = map[string]any{}
	err := nb.InjectParams([]string{"steps=5"})
	if want := `-p steps=5: the notebook has no cell tagged "parameters" to declare parameters in (tag the code cell that sets their defaults)`; err == nil || err.Error() != want {
		t.Errorf("no parameters cell:\ngot  %v\nwant %s", err, want)
	}
}

func TestCIParams(t *testing.T) {
	nb := &Notebook{Metadata: map[string]any{"ragen": map[string]any{"ci_parameters": []any{"steps=2", "seeds=1"}}}}
	got, err := nb.CIParams()
	if err != nil || len(got) != 2 || got[0] != "steps=2" || got[1] != "seeds=1" {
		t.Fatalf("CIParams = %q, %v", got, err)
	}
	for _, bad := range []map[string]any{
		{},
		{"ragen": map[string]any{}},
		{"ragen": map[string]any{"ci_parameters": "steps=2"}},
		{"ragen": map[string]any{"ci_parameters": []any{2}}},
	} {
		nb := &Notebook{Metadata: bad}
		if _, err := nb.CIParams(); err == nil || !strings.Contains(err.Error(), "ci_parameters") {
			t.Errorf("metadata %v: error %v, want one naming ci_parameters", bad, err)
		}
	}
}
