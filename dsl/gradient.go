package dsl

import (
	"bytes"
	"encoding/base64"
	"fmt"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/plots"
)

// GradientReport is one step's gradient analysis (Experiment.GradientReportEvery):
// the norm of the gradient of each term of the actor loss — task (PPO),
// entropy bonus, KL — on buckets of groups by in-group reward std. A cell
// that ends with one shows its chart and its table.
type GradientReport struct {
	plots.GradientReport
	// Missing says why there is no report ("" when there is one).
	Missing string
}

// GradientReport returns the gradient analysis of step, or of the last
// step that has one when no step is given.
//
//	run.GradientReport()     // the latest
//	run.GradientReport(51)   // step 51's
func (r *Run) GradientReport(step ...int) *GradientReport {
	if r == nil {
		return &GradientReport{Missing: "no run (nil *Run)"}
	}
	s := -1
	if len(step) > 0 {
		s = step[0]
	}
	g, ok := plots.GradientReportAt(&r.History, s)
	if !ok {
		why := fmt.Sprintf("no gradient report in %s: set GradientReportEvery (it runs on step 1 and every N steps after)", r.Name)
		if s >= 0 {
			why = fmt.Sprintf("no gradient report at step %d of %s (GradientReportEvery N reports steps 1, N+1, 2N+1, …)", s, r.Name)
		}
		return &GradientReport{Missing: why}
	}
	g.Run = r.Name
	return &GradientReport{GradientReport: g}
}

// Chart is the report's chart: norm against bucket for each term.
func (g *GradientReport) Chart() *plots.GradientChart {
	return plots.NewGradientChart(g.GradientReport)
}

// Table lists the buckets, lowest reward std first, then the whole batch:
// groups, trajectories, mean reward std, and each term's gradient norm,
// in total and per loss token.
func (g *GradientReport) Table() *Table {
	t := &Table{Title: fmt.Sprintf("%s: gradient norms by reward-std bucket, step %d", g.Run, g.Step),
		Columns: []string{"bucket", "groups", "trajectories", "reward std"}}
	if g.Missing != "" {
		t.Title = g.Missing
		return t
	}
	var terms []string
	if len(g.Buckets) > 0 {
		for _, term := range plots.GradientTerms {
			if _, ok := g.Buckets[0].Norm[term]; ok {
				terms = append(terms, term)
			}
		}
	}
	for _, term := range terms {
		t.Columns = append(t.Columns, term)
	}
	for _, term := range terms {
		t.Columns = append(t.Columns, metrics.GradPerToken+term)
	}
	rows := g.Buckets
	if g.All != nil {
		rows = append(rows[:len(rows):len(rows)], *g.All)
	}
	for _, b := range rows {
		row := []string{b.Name, fmt.Sprint(b.Groups), fmt.Sprint(b.Samples), sig3(b.StdMean)}
		for _, term := range terms {
			row = append(row, sig3(b.Norm[term]))
		}
		for _, term := range terms {
			row = append(row, sig3(b.PerToken[term]))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// String is the table as text.
func (g *GradientReport) String() string { return g.Table().String() }

// MIMEBundle shows the chart and, below it, the table.
func (g *GradientReport) MIMEBundle() map[string]any {
	t := g.Table()
	if g.Missing != "" || len(g.Buckets) == 0 {
		return t.MIMEBundle()
	}
	var b bytes.Buffer
	if img, err := g.Chart().PNG(); err == nil {
		b.WriteString(`<img style="max-width:100%" src="data:image/png;base64,`)
		b.WriteString(base64.StdEncoding.EncodeToString(img))
		b.WriteString(`"><br>`)
	}
	b.WriteString(t.HTML())
	return map[string]any{"text/plain": t.String(), "text/html": b.String()}
}
