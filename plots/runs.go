package plots

import (
	"fmt"
	"strings"

	"github.com/ragen-go/ragen/engine/metrics"
)

// entry is one item of a chart's legend: a run, or a group of seeds drawn
// as their mean with a band.
type entry struct {
	label string
	runs  []*metrics.History
	group bool
}

// runSet is what the line-based charts share: the runs and seed groups
// added to them, in order (the order fixes the colours).
type runSet []entry

func (s *runSet) add(runs []*metrics.History) {
	for _, h := range runs {
		*s = append(*s, entry{runs: []*metrics.History{h}})
	}
}

func (s *runSet) addSeeds(label string, seeds []*metrics.History) {
	*s = append(*s, entry{label: label, runs: seeds, group: true})
}

// check reports the first problem with what was added, by position.
func (s runSet) check() error {
	if len(s) == 0 {
		return fmt.Errorf("no runs to plot (call Add or AddSeeds)")
	}
	for i, e := range s {
		if e.group && len(e.runs) == 0 {
			return fmt.Errorf("seed group %q has no runs", e.label)
		}
		for k, h := range e.runs {
			if h == nil && e.group {
				return fmt.Errorf("seed group %q: seed %d is nil", e.label, k+1)
			}
			if h == nil {
				return fmt.Errorf("run %d is nil", i+1)
			}
		}
	}
	return nil
}

// name is the label of entry i: the group label, else the run's name, else
// its position.
func (s runSet) name(i int) string {
	e := s[i]
	switch {
	case e.label != "":
		return e.label
	case !e.group && e.runs[0].Name != "":
		return e.runs[0].Name
	}
	return fmt.Sprintf("run %d", i+1)
}

// legend lists the entries that appear on some panel; a group says how
// many seeds it averages and which band surrounds the mean. A single run
// named like the figure's title gets no entry: it would repeat the title.
func (s runSet) legend(title string, band Band, shown map[int]bool, suffix func(i int) string) []LegendEntry {
	if len(shown) == 1 {
		for i := range shown {
			if !s[i].group && s.name(i) == title && suffix == nil {
				return nil
			}
		}
	}
	var l []LegendEntry
	for i, e := range s {
		if !shown[i] {
			continue
		}
		label := s.name(i)
		if e.group {
			label += fmt.Sprintf(" (%d seeds", len(e.runs))
			if band != BandNone {
				label += ", " + band.String()
			}
			label += ")"
		}
		if suffix != nil {
			label += suffix(i)
		}
		l = append(l, LegendEntry{Label: label, Color: colorAt(i), Band: e.group && band != BandNone})
	}
	return l
}

// trace draws metric for entry i: a run as its (smoothed) curve over its
// raw data in faint, a group as the mean of its smoothed seeds with the
// band. A validation metric (val/...) is measured every few steps over many
// episodes: it is drawn unsmoothed, a dot at each measurement. It returns
// no lines when the metric was never recorded.
func (s runSet) trace(i int, metric string, beta float64, band Band, dashed bool) ([]line, skipped, error) {
	ls, skip, err := s.traceCurves(i, metric, beta, band, dashed)
	if isValidation(metric) {
		for k := range ls {
			ls[k].points = !ls[k].bandOnly
		}
	}
	return ls, skip, err
}

// isValidation reports a metric measured on held-out seeds every few steps.
func isValidation(metric string) bool { return strings.HasPrefix(metric, "val/") }

func (s runSet) traceCurves(i int, metric string, beta float64, band Band, dashed bool) ([]line, skipped, error) {
	e, col := s[i], colorAt(i)
	if isValidation(metric) {
		beta = 0
	}
	var skip skipped
	var curves []curve
	for _, h := range e.runs {
		c, n, err := metricCurve(h, metric)
		if err != nil {
			return nil, skip, err
		}
		skip.nonFinite += n
		if len(c.x) > 0 {
			curves = append(curves, c)
		}
	}
	if len(curves) == 0 {
		return nil, skip, nil
	}
	if !e.group {
		c := curves[0]
		if beta == 0 {
			return []line{{color: col, dashed: dashed, c: c}}, skip, nil
		}
		smooth := curve{x: c.x, y: EMA(c.y, beta)}
		return []line{{color: col, dashed: dashed, faint: true, c: c}, {color: col, dashed: dashed, smoothed: true, c: smooth}}, skip, nil
	}
	if len(curves) < len(e.runs) {
		return nil, skip, fmt.Errorf("seed group %q: %s is recorded by %d of %d seeds", s.name(i), metric, len(curves), len(e.runs))
	}
	for k := range curves {
		curves[k].y = EMA(curves[k].y, beta)
	}
	mean, lo, hi, n := aggregate(curves, band)
	skip.unshared += n
	if len(mean.x) == 0 {
		return nil, skip, fmt.Errorf("seed group %q: its seeds share no step of %s", s.name(i), metric)
	}
	l := line{color: col, dashed: dashed, c: mean}
	if band != BandNone {
		l.lo, l.hi = lo, hi
	}
	return []line{l}, skip, nil
}

// events returns the collapse-monitor events of entry i as markers in its
// colour; the seeds of a group that report the same kind at the same step
// give one marker.
func (s runSet) events(i int) []marker {
	var ms []marker
	seen := map[string]bool{}
	for _, h := range s[i].runs {
		for _, ev := range h.Events {
			key := fmt.Sprintf("%d/%s", ev.Step, ev.Kind)
			if seen[key] {
				continue
			}
			seen[key] = true
			ms = append(ms, marker{step: float64(ev.Step), label: shortKind(ev.Kind), color: colorAt(i)})
		}
	}
	return ms
}

// summary is the text/plain form of a chart over these runs.
func (s runSet) summary(what string, panels []string) string {
	var b strings.Builder
	names := make([]string, len(s))
	events := 0
	for i := range s {
		names[i] = s.name(i)
		for _, h := range s[i].runs {
			events += len(h.Events)
		}
	}
	fmt.Fprintf(&b, "%s of %s: %s", what, strings.Join(names, ", "), strings.Join(panels, ", "))
	if events > 0 {
		fmt.Fprintf(&b, "; %d events:", events)
		for i := range s {
			for _, h := range s[i].runs {
				for _, ev := range h.Events {
					fmt.Fprintf(&b, "\n  step %d %s (%s): %s", ev.Step, ev.Kind, s.name(i), ev.Message)
				}
			}
		}
	}
	return b.String()
}
