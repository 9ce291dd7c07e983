package plots

import (
	"reflect"
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
)

// TestValidationPoints: validation, measured every few steps, is drawn
// unsmoothed with a dot at each measurement; a training metric is smoothed
// over its faint raw line, without dots.
func TestValidationPoints(t *testing.T) {
	h := &metrics.History{Name: "r"}
	for s := 0; s <= 20; s++ {
		v := map[string]float64{metrics.SuccessRate: float64(s%3) / 3}
		if s%5 == 0 {
			v[metrics.ValSuccessRate] = float64(s%10) / 10
		}
		h.Steps = append(h.Steps, metrics.Step{Step: s, Values: v})
	}
	var s runSet
	s.add([]*metrics.History{h})
	ls, _, err := s.trace(0, metrics.ValSuccessRate, 0.9, BandMinMax, true)
	if err != nil {
		t.Fatal(err)
	}
	want := curve{x: []float64{0, 5, 10, 15, 20}, y: []float64{0, 0.5, 0, 0.5, 0}}
	if len(ls) != 1 || !ls[0].points || !ls[0].dashed || ls[0].faint || !reflect.DeepEqual(ls[0].c, want) {
		t.Errorf("validation: %+v\nwant one dashed line with dots at the raw %v", ls, want)
	}
	s.addSeeds("seeds", []*metrics.History{h, h})
	if ls, _, err = s.trace(1, metrics.ValSuccessRate, 0.9, BandMinMax, false); err != nil || len(ls) != 1 || !ls[0].points || !reflect.DeepEqual(ls[0].c.y, want.y) {
		t.Errorf("validation of a seed group: %v %+v, want the raw mean with dots", err, ls)
	}
	ls, _, err = s.trace(0, metrics.SuccessRate, 0.9, BandMinMax, false)
	if err != nil || len(ls) != 2 || ls[0].points || ls[1].points || !ls[0].faint || !ls[1].smoothed {
		t.Errorf("training metric: %v %+v, want a faint raw line and a smoothed one, no dots", err, ls)
	}
}
