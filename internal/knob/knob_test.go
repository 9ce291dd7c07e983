package knob

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	Rate    float32  `json:"rate" flag:"rate" help:"a rate"`
	Names   []string `json:"names" flag:"names" help:"some names"`
	Ignored string   `json:"-" flag:"-"`
}

type config struct {
	Size   int      `json:"size" flag:"size" help:"a size" group:"shape"`
	Seed   int64    `json:"seed" flag:"seed" help:"a seed"`
	On     bool     `json:"on" flag:"on" help:"a switch" group:"other"`
	Above  *float64 `json:"above,omitempty" flag:"above" help:"a threshold"`
	Inner  inner    `json:"inner" flag:"in" group:"inner"`
	Opt    *inner   `json:"opt,omitempty" flag:"opt" group:"optional"`
	Flat   inner    `json:"flat" flag:""`
	Hidden func()   `json:"-"`
}

// TestFields: keys are JSON paths, flags join the prefixes, groups apply
// to a struct's fields and go on after a leaf's.
func TestFields(t *testing.T) {
	var got []string
	for _, f := range Fields(reflect.TypeOf(config{})) {
		got = append(got, f.Key+" "+f.Path+" -"+f.Flag+" ["+f.Group+"]")
	}
	want := []string{
		"size Size -size [shape]", "seed Seed -seed [shape]", "on On -on [other]", "above Above -above [other]",
		"inner.rate Inner.Rate -in-rate [inner]", "inner.names Inner.Names -in-names [inner]", "inner.ignored Inner.Ignored - [inner]",
		"opt.rate Opt.Rate -opt-rate [optional]", "opt.names Opt.Names -opt-names [optional]", "opt.ignored Opt.Ignored - [optional]",
		"flat.rate Flat.Rate -rate [other]", "flat.names Flat.Names -names [other]", "flat.ignored Flat.Ignored - [other]",
		"hidden Hidden - [other]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields\n got %q\nwant %q", got, want)
	}
}

// TestBind: flags set their fields, a struct pointer is allocated only when
// one of its flags is given, defaults come from the value bound, and
// Reapply copies the given flags onto another value.
func TestBind(t *testing.T) {
	c := config{Size: 4, Inner: inner{Rate: 0.5}}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bound := Bind(fs, &c)
	if d := fs.Lookup("size").DefValue; d != "4" {
		t.Errorf("-size default %q, want 4", d)
	}
	if err := fs.Parse([]string{"-size", "9", "-seed=-3", "-on", "-above", "0.25", "-in-names", "a,b", "-rate", "0.1"}); err != nil {
		t.Fatal(err)
	}
	above := 0.25
	want := config{Size: 9, Seed: -3, On: true, Above: &above, Inner: inner{Rate: 0.5, Names: []string{"a", "b"}}, Flat: inner{Rate: 0.1}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("parsed %+v\nwant %+v", c, want)
	}
	if err := fs.Parse([]string{"-opt-rate", "2"}); err != nil || c.Opt == nil || c.Opt.Rate != 2 {
		t.Errorf("-opt-rate 2: %v, %+v", err, c.Opt)
	}
	other := config{Size: 1}
	Reapply(fs, bound, &c, &other)
	want = c
	want.Inner.Rate = 0 // not given: other keeps its own
	if !reflect.DeepEqual(other, want) {
		t.Errorf("reapplied %+v\nwant %+v", other, want)
	}
	if err := fs.Parse([]string{"-size", "x"}); err == nil || !strings.Contains(err.Error(), `invalid value "x" for flag -size: invalid syntax`) {
		t.Errorf("-size x: %v", err)
	}
	var b strings.Builder
	PrintSections(&b, fs, Sections(bound))
	for _, s := range []string{"\nshape:\n  -size int\n    \ta size (default 4)\n", "\n  -on\n    \ta switch\n", "\n  -in-names list\n"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("usage lacks %q:\n%s", s, b.String())
		}
	}
}
