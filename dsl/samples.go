package dsl

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"

	"github.com/ragen-go/ragen/engine/metrics"
)

// Samples returns the episodes the run kept of a split, "val" or "train"
// (metrics.SplitVal, metrics.SplitTrain), at one step, in order; step -1
// is the last step that has samples of the split. A run keeps the first
// validation episodes of every validation (step 0, before training, then
// every ValEvery steps and the last), on the same seeds each time, and one
// training trajectory, with its per-token credit, at step 1, every
// ValEvery-th step and the last. A step without samples gives none; an
// unknown split panics.
func (r *Run) Samples(split string, step int) []metrics.Sample {
	if split != metrics.SplitVal && split != metrics.SplitTrain {
		panic(fmt.Errorf("Samples: unknown split %q (want %q or %q)", split, metrics.SplitVal, metrics.SplitTrain))
	}
	if step == -1 {
		for _, s := range r.History.Samples {
			if s.Split == split {
				step = max(step, s.Step)
			}
		}
		if step == -1 {
			return nil
		}
	}
	return r.History.SamplesAt(split, step)
}

// SampleView shows episodes side by side: one column per split and step,
// in the order the samples come, and in a column the samples in order, so
// the validation samples of two steps — the same seeds in the same order —
// face each other row by row. A cell that ends with it shows it; Display
// shows it mid-cell.
//
//	ragen.ShowSamples(append(run.Samples("val", 0), run.Samples("val", -1)...)...)
type SampleView struct {
	Samples []metrics.Sample
}

// ShowSamples is the view of samples (see SampleView).
func ShowSamples(samples ...metrics.Sample) *SampleView {
	return &SampleView{Samples: samples}
}

// noSamples explains an empty view: where samples come from.
const noSamples = "no samples (a run keeps validation samples at step 0, every ValEvery steps and the last; " +
	"training samples at step 1, every ValEvery-th step and the last)"

// sampleColumn is the samples of one split and step.
type sampleColumn struct {
	split   string
	step    int
	samples []metrics.Sample
}

// columns groups the samples by split and step, in order of first
// appearance.
func (v *SampleView) columns() []sampleColumn {
	var cols []sampleColumn
	at := map[string]int{}
	for _, s := range v.Samples {
		key := s.Split + "\x00" + strconv.Itoa(s.Step)
		i, ok := at[key]
		if !ok {
			i = len(cols)
			at[key] = i
			cols = append(cols, sampleColumn{split: s.Split, step: s.Step})
		}
		cols[i].samples = append(cols[i].samples, s)
	}
	return cols
}

func outcome(success bool) string {
	if success {
		return "success"
	}
	return "failure"
}

func actionsOf(t metrics.SampleTurn) string {
	if len(t.Actions) == 0 {
		return "no action ran"
	}
	return "actions: " + strings.Join(t.Actions, ", ")
}

// String lists the samples: a header line each, then every turn's reward,
// actions and response, indented.
func (v *SampleView) String() string {
	if len(v.Samples) == 0 {
		return noSamples
	}
	var b strings.Builder
	for i, s := range v.Samples {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "%s · step %d · seed %d · reward %s · %s", s.Split, s.Step, s.Seed, num(s.Reward), outcome(s.Success))
		for k, t := range s.Turns {
			fmt.Fprintf(&b, "\n  turn %d · reward %s · %s", k+1, num(t.Reward), actionsOf(t))
			for _, line := range strings.Split(t.Response, "\n") {
				b.WriteString("\n    " + line)
			}
		}
	}
	return b.String()
}

// Inline styles throughout: they survive Jupyter classic, JupyterLab and
// nbconvert's HTML alike, and cannot leak into the rest of the page as a
// <style> block would. Jupyter's table CSS right-aligns and zebra-stripes
// cells, so cells set their alignment and background themselves. Cells
// draw their left and top borders and the frame around the table the
// right and bottom ones: collapsed borders would make a 100%-wide table
// one pixel wider than its frame, and show a scroll bar for nothing.
const (
	cellStyle = "vertical-align:top;text-align:left;padding:6px 8px;border:0;border-left:1px solid #ddd;border-top:1px solid #ddd;background:#fff;color:#222"
	preStyle  = "white-space:pre-wrap;word-break:break-word;text-align:left;margin:2px 0 6px 0;padding:4px 6px;" +
		"background:#f6f6f6;color:#222;border:0;font-size:12px;line-height:1.4"
	noteStyle = "color:#666;font-size:11px"
	// Okabe–Ito bluish green and vermillion, as the plots use them.
	successColor = "#009E73"
	failureColor = "#D55E00"
)

// HTML is the view as an HTML table, one column per split and step.
func (v *SampleView) HTML() string {
	if len(v.Samples) == 0 {
		return "<p>" + html.EscapeString(noSamples) + "</p>"
	}
	cols := v.columns()
	rows := 0
	for _, c := range cols {
		rows = max(rows, len(c.samples))
	}
	var b strings.Builder
	// Equal columns across the cell, but at least 22em each: more scroll
	// sideways.
	fmt.Fprintf(&b, `<div style="overflow-x:auto;border-right:1px solid #ddd;border-bottom:1px solid #ddd">`+
		`<table style="table-layout:fixed;border-collapse:separate;border-spacing:0;width:max(100%%,%dem);margin:0;font-size:12px">`, 22*len(cols))
	b.WriteString("<thead><tr>")
	for _, c := range cols {
		fmt.Fprintf(&b, `<th style="%s;font-weight:bold;background:#f0f0f0">%s · step %d</th>`, cellStyle, html.EscapeString(c.split), c.step)
	}
	b.WriteString("</tr></thead><tbody>")
	for r := range rows {
		b.WriteString("<tr>")
		for _, c := range cols {
			fmt.Fprintf(&b, `<td style="%s">`, cellStyle)
			if r < len(c.samples) {
				writeSampleHTML(&b, &c.samples[r])
			}
			b.WriteString("</td>")
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</tbody></table></div>")
	return b.String()
}

// writeSampleHTML writes one sample: its header, its turns, and the whole
// conversation folded away.
func writeSampleHTML(b *strings.Builder, s *metrics.Sample) {
	col := failureColor
	if s.Success {
		col = successColor
	}
	fmt.Fprintf(b, `<div style="font-weight:bold;margin-bottom:4px">%s · step %d · seed %d · reward %s · <span style="color:%s">%s</span></div>`,
		html.EscapeString(s.Split), s.Step, s.Seed, num(s.Reward), col, outcome(s.Success))
	for k, t := range s.Turns {
		fmt.Fprintf(b, `<div style="%s">turn %d · reward %s · %s</div>`, noteStyle, k+1, num(t.Reward), html.EscapeString(actionsOf(t)))
		fmt.Fprintf(b, `<pre style="%s">%s</pre>`, preStyle, html.EscapeString(t.Response))
	}
	if s.Text != "" {
		fmt.Fprintf(b, `<details><summary style="%s;cursor:pointer">whole conversation</summary><pre style="%s">%s</pre></details>`,
			noteStyle, preStyle, html.EscapeString(s.Text))
	}
}

// MIMEBundle shows the samples as HTML, with the text form for terminals.
func (v *SampleView) MIMEBundle() map[string]any {
	return map[string]any{"text/plain": v.String(), "text/html": v.HTML()}
}

// CreditView shows credit assignment on one training sample: the agent's
// tokens in order, each coloured by its advantage on a diverging scale
// (blue: made more likely by the update, vermillion: less likely, white:
// untouched), with its reward, value, advantage and return on hover, and
// the turns apart. The text form is the same numbers as a table. The chart
// of these numbers is plots.NewCreditChart(s).
//
//	ragen.ShowCredit(run.Samples("train", -1)[0])
type CreditView struct {
	Sample metrics.Sample
}

// ShowCredit is the credit view of a training sample (see CreditView).
func ShowCredit(s metrics.Sample) *CreditView { return &CreditView{Sample: s} }

func (v *CreditView) header() string {
	s := &v.Sample
	tokens := "agent tokens"
	if len(s.Tokens) == 1 {
		tokens = "agent token"
	}
	return fmt.Sprintf("credit assignment · %s step %d · seed %d · reward %s (%s) · %d %s",
		s.Split, s.Step, s.Seed, num(s.Reward), outcome(s.Success), len(s.Tokens), tokens)
}

// noTokens explains a sample without tokens.
func (v *CreditView) noTokens() string {
	return fmt.Sprintf("%s step %d has no tokens: only training samples keep them (run.Samples(\"train\", step))",
		v.Sample.Split, v.Sample.Step)
}

// Table is the tokens with their numbers, one row each.
func (v *CreditView) Table() *Table {
	t := &Table{Title: v.header(), Columns: []string{"#", "turn", "token", "reward", "value", "advantage", "return"}}
	for i, tok := range v.Sample.Tokens {
		t.Rows = append(t.Rows, []string{strconv.Itoa(i), strconv.Itoa(tok.Turn + 1), strconv.Quote(tok.Text),
			num(tok.Reward), num(tok.Value), num(tok.Advantage), num(tok.Return)})
	}
	return t
}

// String is the table of tokens.
func (v *CreditView) String() string {
	if len(v.Sample.Tokens) == 0 {
		return v.noTokens()
	}
	return v.Table().String()
}

// creditScale is the largest |advantage|: the ends of the colour scale,
// symmetric about 0 so that white always means zero.
func (v *CreditView) creditScale() float64 {
	m := 0.0
	for _, t := range v.Sample.Tokens {
		if !math.IsNaN(t.Advantage) {
			m = math.Max(m, math.Abs(t.Advantage))
		}
	}
	return m
}

// advColor is the background of a token of advantage a on the scale
// [-m, m]: white at 0 blending linearly towards blue (#0072B2) for a > 0
// and vermillion (#D55E00) for a < 0, to 85% at the ends so the text stays
// legible; dark text on light tints, white on deep ones. NaN is grey.
func advColor(a, m float64) (bg, fg string) {
	if math.IsNaN(a) {
		return "#bbbbbb", "#222"
	}
	f := 0.0
	if m > 0 {
		f = math.Min(1, math.Abs(a)/m) * 0.85
	}
	end := [3]float64{0x00, 0x72, 0xB2}
	if a < 0 {
		end = [3]float64{0xD5, 0x5E, 0x00}
	}
	var c [3]int
	for i := range c {
		c[i] = int(math.Round(255 + f*(end[i]-255)))
	}
	fg = "#222"
	if f > 0.5 {
		fg = "#fff"
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2]), fg
}

// tokenText is how a token shows inline: a newline as ↵ before the break,
// an empty token as ∅, so every token has something to hover.
func tokenText(s string) string {
	if s == "" {
		return "∅"
	}
	return strings.ReplaceAll(s, "\n", "↵\n")
}

// HTML is the view: a header, a legend, then each turn's tokens.
func (v *CreditView) HTML() string {
	s := &v.Sample
	if len(s.Tokens) == 0 {
		return "<p>" + html.EscapeString(v.noTokens()) + "</p>"
	}
	m := v.creditScale()
	largestReward := 0.0
	for _, t := range s.Tokens {
		largestReward = math.Max(largestReward, math.Abs(t.Reward))
	}
	var b strings.Builder
	b.WriteString(`<div style="color:#222;background:#fff;padding:4px;font-size:12px;text-align:left">`)
	fmt.Fprintf(&b, `<div style="font-weight:bold;margin-bottom:4px">%s</div>`, html.EscapeString(v.header()))
	// Legend: the colour scale from -m to +m, and what the badges mean.
	fmt.Fprintf(&b, `<div style="%s;margin-bottom:6px">`, noteStyle)
	if m > 0 {
		lo, _ := advColor(-m, m)
		hi, _ := advColor(m, m)
		fmt.Fprintf(&b, `advantage <span style="font-family:monospace">%s</span> `+
			`<span style="display:inline-block;width:12em;height:0.9em;vertical-align:middle;border:1px solid #ccc;background:linear-gradient(to right,%s,#ffffff,%s)"></span>`+
			` <span style="font-family:monospace">+%s</span>`, html.EscapeString(num(-m)), lo, hi, html.EscapeString(num(m)))
	} else {
		b.WriteString("advantage 0 on every token")
	}
	fmt.Fprintf(&b, ` · <span style="background:%s;color:#fff;border-radius:3px;padding:0 3px">r</span> `+
		`a reward of at least a twentieth of the largest · hover a token for its numbers</div>`, successColor)
	turn := -1
	for i, t := range s.Tokens {
		if t.Turn != turn {
			if turn >= 0 {
				b.WriteString("</div>")
			}
			turn = t.Turn
			label := fmt.Sprintf("turn %d", turn+1)
			if turn < len(s.Turns) {
				label += fmt.Sprintf(" · reward %s · %s", num(s.Turns[turn].Reward), actionsOf(s.Turns[turn]))
			}
			border := "border-top:1px dashed #999;padding-top:3px;"
			if i == 0 {
				border = ""
			}
			fmt.Fprintf(&b, `<div style="%s%s;margin-top:4px">%s</div>`, border, noteStyle, html.EscapeString(label))
			b.WriteString(`<div style="font-family:monospace;font-size:12px;white-space:pre-wrap;word-break:break-word;line-height:1.7">`)
		}
		bg, fg := advColor(t.Advantage, m)
		tip := fmt.Sprintf("token %d · turn %d · %s\nreward %s\nvalue %s\nadvantage %s\nreturn %s",
			i, t.Turn+1, strconv.Quote(t.Text), num(t.Reward), num(t.Value), num(t.Advantage), num(t.Return))
		fmt.Fprintf(&b, `<span style="background:%s;color:%s" title="%s">%s</span>`,
			bg, fg, html.EscapeString(tip), html.EscapeString(tokenText(t.Text)))
		if t.Reward != 0 && math.Abs(t.Reward) >= largestReward/20 {
			fmt.Fprintf(&b, `<span style="background:%s;color:#fff;border-radius:3px;padding:0 3px;margin:0 2px;font-size:11px" title="reward of token %d">r %s</span>`,
				successColor, i, html.EscapeString(num(t.Reward)))
		}
	}
	b.WriteString("</div></div>")
	return b.String()
}

// MIMEBundle shows the tokens as HTML, with the table for terminals.
func (v *CreditView) MIMEBundle() map[string]any {
	return map[string]any{"text/plain": v.String(), "text/html": v.HTML()}
}
