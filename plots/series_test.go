package plots

import (
	"math"
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
)

func TestEMAMatchesDefinition(t *testing.T) {
	ys := []float64{3, -1, 4, 1, 5, 9, 2}
	const beta = 0.7
	got := EMA(ys, beta)
	// Direct form: ŝ_t = Σ_{i≤t} β^{t-i} (1-β) y_i / (1 - β^t).
	for t0 := range ys {
		var num float64
		for i := 0; i <= t0; i++ {
			num += math.Pow(beta, float64(t0-i)) * (1 - beta) * ys[i]
		}
		want := num / (1 - math.Pow(beta, float64(t0+1)))
		if math.Abs(got[t0]-want) > 1e-12 {
			t.Errorf("EMA[%d] = %v, want %v", t0, got[t0], want)
		}
	}
	if raw := EMA(ys, 0); raw[3] != ys[3] {
		t.Errorf("beta 0 changed the data: %v", raw)
	}
}

func TestAggregateAlignsSeeds(t *testing.T) {
	seeds := []curve{
		{x: []float64{0, 1, 2, 3}, y: []float64{1, 2, 3, 4}},
		{x: []float64{0, 2, 3}, y: []float64{3, 5, 8}},       // missed step 1
		{x: []float64{0, 2, 3, 4}, y: []float64{2, 4, 6, 9}}, // ran one step more
	}
	mean, lo, hi, dropped := aggregate(seeds, BandMinMax)
	wantX, wantY := []float64{0, 2, 3}, []float64{2, 4, 6}
	if len(mean.x) != 3 || dropped != 2 {
		t.Fatalf("steps %v (dropped %d), want %v (dropped 2)", mean.x, dropped, wantX)
	}
	for i := range wantX {
		if mean.x[i] != wantX[i] || mean.y[i] != wantY[i] {
			t.Errorf("point %d = (%v, %v), want (%v, %v)", i, mean.x[i], mean.y[i], wantX[i], wantY[i])
		}
	}
	if lo[2] != 4 || hi[2] != 8 {
		t.Errorf("min–max at step 3 = [%v, %v], want [4, 8]", lo[2], hi[2])
	}
	_, lo, hi, _ = aggregate(seeds, BandStd)
	if sd := math.Sqrt(((4-6)*(4-6) + (8-6)*(8-6) + 0) / 2.0); math.Abs(hi[2]-6-sd) > 1e-12 || math.Abs(6-lo[2]-sd) > 1e-12 {
		t.Errorf("±std at step 3 = [%v, %v], want 6 ± %v", lo[2], hi[2], sd)
	}
}

func TestMetricCurveSkipsNonFinite(t *testing.T) {
	h := &metrics.History{Name: "r", Steps: []metrics.Step{
		{Step: 0, Values: map[string]float64{"m": 1}},
		{Step: 1, Values: map[string]float64{"m": math.NaN()}},
		{Step: 2, Values: map[string]float64{"m": math.Inf(1)}},
		{Step: 3, Values: map[string]float64{"m": 4}},
	}}
	c, dropped, err := metricCurve(h, "m")
	if err != nil || dropped != 2 || len(c.x) != 2 || c.x[1] != 3 {
		t.Fatalf("got %v, dropped %d, err %v", c, dropped, err)
	}
}

func TestLogTicksLabelNarrowRanges(t *testing.T) {
	for _, r := range [][2]float64{{0.3, 3}, {0.7, 40}, {1e-3, 1e3}, {1.2, 1.9}} {
		labels := 0
		for _, tk := range (logTicks{}).Ticks(r[0], r[1]) {
			if tk.Label != "" {
				labels++
				if tk.Value < r[0] || tk.Value > r[1] {
					t.Errorf("range %v: tick %v outside", r, tk.Value)
				}
			}
		}
		if labels < 2 {
			t.Errorf("range %v: %d labels, want at least 2", r, labels)
		}
	}
}
