package dsl

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/plots"
)

// Variant is one setting of a comparison and its runs (one per seed).
type Variant struct {
	Label string
	Runs  []*Run
}

// Comparison is the runs of a sweep or of several seeds. A cell that ends
// with one shows a table of final values (mean ± std over seeds) and the
// chart of the variants.
type Comparison struct {
	Title    string
	Variants []Variant
}

// Sweep trains exp once per value of the field at path, a dotted path of
// Experiment field names ("Filter.Ratio", "Algo.EntropyCoef", "GroupSize"),
// with the context set by SetContext. It panics with the error (see
// SweepContext).
func Sweep(exp Experiment, path string, values ...any) *Comparison {
	c, err := SweepContext(currentContext(), exp, path, values...)
	if err != nil {
		panic(err)
	}
	return c
}

// SweepContext is Sweep with a context, returning its error. An unknown
// path or a value that does not fit the field is an error before anything
// trains.
func SweepContext(ctx context.Context, exp Experiment, path string, values ...any) (*Comparison, error) {
	return sweep(ctx, exp, 0, path, values)
}

// SweepSeeds trains exp with n seeds (Seed, Seed+1, ...) for each value of
// the field at path: a variant per value, its runs the seeds. With a Slurm
// Executor all of them are the tasks of one job array. It panics with the
// error (see SweepSeedsContext).
func SweepSeeds(exp Experiment, n int, path string, values ...any) *Comparison {
	c, err := SweepSeedsContext(currentContext(), exp, n, path, values...)
	if err != nil {
		panic(err)
	}
	return c
}

// SweepSeedsContext is SweepSeeds with a context, returning its error.
func SweepSeedsContext(ctx context.Context, exp Experiment, n int, path string, values ...any) (*Comparison, error) {
	if n < 1 {
		return nil, fmt.Errorf("SweepSeeds: n must be ≥ 1 (got %d)", n)
	}
	return sweep(ctx, exp, n, path, values)
}

// sweep trains exp for each value of the field at path, with n seeds each,
// or once with exp's seed when n is 0.
func sweep(ctx context.Context, exp Experiment, n int, path string, values []any) (*Comparison, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("Sweep: no values for %s", path)
	}
	title := fmt.Sprintf("%s: sweep of %s", exp.label(), path)
	if n > 0 {
		title += fmt.Sprintf(", %d seeds", n)
	}
	var variants []variantRuns
	for _, v := range values {
		e := exp
		if err := setField(&e, path, v); err != nil {
			return nil, fmt.Errorf("Sweep: %w", err)
		}
		e.Name = fmt.Sprintf("%s=%v", path, v)
		if exp.Name != "" {
			e.Name = exp.Name + " " + e.Name
		}
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("Sweep: %s=%v: %w", path, v, err)
		}
		runs := []Experiment{e}
		if n > 0 {
			runs = withSeeds(e, n)
		}
		variants = append(variants, variantRuns{e.Name, runs})
	}
	return compare(ctx, executorOf(exp), "Sweep", title, variants)
}

// Seeds trains exp with n seeds, Seed, Seed+1, ..., with the context set by
// SetContext. It panics with the error (see SeedsContext).
func Seeds(exp Experiment, n int) *Comparison {
	c, err := SeedsContext(currentContext(), exp, n)
	if err != nil {
		panic(err)
	}
	return c
}

// SeedsContext is Seeds with a context, returning its error.
func SeedsContext(ctx context.Context, exp Experiment, n int) (*Comparison, error) {
	if n < 1 {
		return nil, fmt.Errorf("Seeds: n must be ≥ 1 (got %d)", n)
	}
	if err := exp.Validate(); err != nil {
		return nil, err
	}
	title := fmt.Sprintf("%s: %d seeds", exp.label(), n)
	return compare(ctx, executorOf(exp), "Seeds", title, []variantRuns{{exp.label(), withSeeds(exp, n)}})
}

// withSeeds is exp with the seeds Seed, Seed+1, ... (Seed 0 counts as 1),
// each named "<label> seed <seed>".
func withSeeds(exp Experiment, n int) []Experiment {
	first := exp.Seed
	if first == 0 {
		first = 1
	}
	out := make([]Experiment, n)
	for i := range out {
		e := exp
		e.Seed = first + int64(i)
		e.Name = fmt.Sprintf("%s seed %d", exp.label(), e.Seed)
		out[i] = e
	}
	return out
}

// variantRuns are the experiments of one variant of a comparison.
type variantRuns struct {
	label string
	exps  []Experiment
}

// compare trains every experiment with ex (nil: here, one after another)
// and collects the runs by variant. On an error the comparison holds the
// runs that finished; the error starts with what (Sweep, Seeds).
func compare(ctx context.Context, ex Executor, what, title string, variants []variantRuns) (*Comparison, error) {
	var specs []*RunSpec
	for _, v := range variants {
		for _, e := range v.exps {
			s, err := e.Spec()
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", what, e.label(), err)
			}
			specs = append(specs, s)
		}
	}
	runs, err := RunAll(ctx, ex, specs)
	c := &Comparison{Title: title}
	i := 0
	for _, v := range variants {
		cv := Variant{Label: v.label}
		for range v.exps {
			if runs[i] != nil {
				cv.Runs = append(cv.Runs, runs[i])
			}
			i++
		}
		if len(cv.Runs) > 0 {
			c.Variants = append(c.Variants, cv)
		}
	}
	if err != nil {
		return c, fmt.Errorf("%s: %w", what, err)
	}
	return c, nil
}

// setField sets the field at a dotted path of exp to v, converting numbers
// between int and float kinds when the value is exact.
func setField(exp *Experiment, path string, v any) error {
	cur := reflect.ValueOf(exp).Elem()
	name := "Experiment"
	for i, part := range strings.Split(path, ".") {
		if cur.Kind() != reflect.Struct {
			return fmt.Errorf("%s is %s, not a struct: no field %q", name, cur.Type(), part)
		}
		f, ok := cur.Type().FieldByName(part)
		if !ok || !f.IsExported() {
			return fmt.Errorf("%s has no field %q (fields: %s)", name, part, fieldNames(cur.Type()))
		}
		cur = cur.FieldByIndex(f.Index)
		if i == 0 {
			name = part
		} else {
			name += "." + part
		}
	}
	dst := cur
	if cur.Kind() == reflect.Pointer {
		dst = reflect.New(cur.Type().Elem()).Elem()
	}
	x, err := convertTo(reflect.ValueOf(v), dst.Type())
	if err != nil {
		return fmt.Errorf("%s is %s: cannot set it to %T %v", path, dst.Type(), v, v)
	}
	dst.Set(x)
	if cur.Kind() == reflect.Pointer {
		cur.Set(dst.Addr())
	}
	return nil
}

func fieldNames(t reflect.Type) string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() {
			names = append(names, f.Name)
		}
	}
	return strings.Join(names, ", ")
}

// convertTo converts v to t: assignable values as they are, strings to
// string types ("small" → ModelSpec), numbers when exact (2 → 2.0, 2.0 → 2,
// not 2.5 → int).
func convertTo(v reflect.Value, t reflect.Type) (reflect.Value, error) {
	if !v.IsValid() {
		return v, fmt.Errorf("nil")
	}
	if v.Type().AssignableTo(t) {
		return v, nil
	}
	if v.Kind() == reflect.String && t.Kind() == reflect.String {
		return v.Convert(t), nil
	}
	isNum := func(k reflect.Kind) bool {
		return k >= reflect.Int && k <= reflect.Float64
	}
	if !isNum(v.Kind()) || !isNum(t.Kind()) || !v.CanConvert(t) {
		return v, fmt.Errorf("type")
	}
	x := v.Convert(t)
	back := x.Convert(v.Type())
	if !back.Equal(v) {
		return v, fmt.Errorf("inexact")
	}
	return x, nil
}

// compared are the columns of a comparison's table.
var compared = []string{metrics.RewardMean, metrics.SuccessRate, metrics.ValSuccessRate, metrics.Entropy}

// Runs lists every run, variant by variant.
func (c *Comparison) Runs() []*Run {
	var out []*Run
	for _, v := range c.Variants {
		out = append(out, v.Runs...)
	}
	return out
}

// Table has one row per variant: the final value of each main metric, as
// mean ± std (unbiased) over the variant's runs.
func (c *Comparison) Table() *Table {
	t := &Table{Title: c.Title, Columns: []string{"variant", "runs"}}
	var cols []string
	for _, m := range compared {
		for _, r := range c.Runs() {
			if r.Metric(m).Len() > 0 {
				cols = append(cols, m)
				break
			}
		}
	}
	t.Columns = append(t.Columns, cols...)
	for _, v := range c.Variants {
		row := []string{v.Label, fmt.Sprint(len(v.Runs))}
		for _, m := range cols {
			var xs []float64
			for _, r := range v.Runs {
				if s := r.Metric(m); s.Len() > 0 {
					xs = append(xs, s.Last())
				}
			}
			row = append(row, meanStd(xs))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func meanStd(xs []float64) string {
	switch len(xs) {
	case 0:
		return "–"
	case 1:
		return sig3(xs[0])
	}
	g := groupStats(xs)
	return sig3(g.Mean) + " ± " + sig3(g.Std)
}

// Chart plots a metric for every variant: one line per run, or the mean
// and spread of a variant's seeds.
func (c *Comparison) Chart(metric string) *plots.LineChart {
	ch := plots.NewLineChart(metric)
	ch.Title = c.Title
	for _, v := range c.Variants {
		hs := make([]*metrics.History, len(v.Runs))
		for i, r := range v.Runs {
			hs[i] = &r.History
		}
		if len(hs) == 1 {
			ch.Add(hs[0])
		} else {
			ch.AddSeeds(v.Label, hs...)
		}
	}
	return ch
}

// String is the table as text.
func (c *Comparison) String() string { return c.Table().String() }

// MIMEBundle shows the table and, below it, the chart of the mean reward.
func (c *Comparison) MIMEBundle() map[string]any {
	t := c.Table()
	html := t.HTML()
	if img, err := c.Chart(metrics.RewardMean).PNG(); err == nil {
		var b bytes.Buffer
		b.WriteString(html)
		b.WriteString(`<br><img src="data:image/png;base64,`)
		b.WriteString(base64.StdEncoding.EncodeToString(img))
		b.WriteString(`">`)
		html = b.String()
	}
	return map[string]any{"text/plain": t.String(), "text/html": html}
}
