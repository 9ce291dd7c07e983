package plots_test

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/plots"
	"gonum.org/v1/plot/cmpimg"
)

var update = flag.Bool("update", false, "rewrite the golden images in testdata/")

// TestMain points os.TempDir at a private directory: the examples save their
// charts there (as a reader would save them anywhere) and the golden test
// picks them up.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ragen-plots-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Golden-image tolerances. Anti-aliased text and lines can move by a shade
// between CPU architectures (FMA contraction in the rasteriser), so pixels
// count as different only beyond pixelTol in some channel, and the image
// passes while at most maxDiffFrac of its pixels differ. A moved label or
// line changes far more than that.
const (
	pixelTol    = 48     // of 255, per channel
	maxDiffFrac = 0.0015 // of all pixels
)

// TestGolden runs every example, which saves its chart, and compares the
// image with testdata/<name>.png. go test ./plots -update rewrites them;
// look at them before committing. On a mismatch the new image and a diff
// are written to the test's artifact directory (keep it with -artifacts).
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		file    string
		example func()
	}{
		{"line.png", ExampleLineChart},
		{"seeds.png", ExampleLineChart_seeds},
		{"log.png", ExampleLineChart_logScale},
		{"dashboard.png", ExampleDashboard},
		{"reasoning.png", ExampleReasoningChart},
		{"groups.png", ExampleGroupRewardChart},
		{"credit.png", ExampleCreditChart},
		{"gradient.png", ExampleGradientChart},
		{"figure.png", ExampleFigure},
	} {
		t.Run(tc.file, func(t *testing.T) {
			quiet(t, tc.example)
			got, err := os.ReadFile(filepath.Join(os.TempDir(), tc.file))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./plots -update to create it)", err)
			}
			if bytes.Equal(got, want) {
				return
			}
			frac, err := diffFraction(got, want)
			if err != nil {
				t.Fatal(err)
			}
			if frac > maxDiffFrac {
				dir := t.ArtifactDir()
				os.WriteFile(filepath.Join(dir, tc.file), got, 0o644)
				writeDiff(t, filepath.Join(dir, "diff-"+tc.file), got, want)
				t.Errorf("%s: %.3f%% of pixels differ (tolerance %.3f%%); new image and diff in %s",
					tc.file, 100*frac, 100*maxDiffFrac, dir)
			}
		})
	}
}

// The tolerance must still catch a real change: a different title, or one
// event label moved.
func TestGoldenToleranceCatchesChanges(t *testing.T) {
	render := func(title string, eventStep int) []byte {
		h := synthRun("a", 1, 60)
		h.Events = h.Events[:1]
		h.Events[0].Step = eventStep
		c := plots.NewLineChart(metrics.Entropy)
		c.Title = title
		c.Add(h)
		img, err := c.PNG()
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	base := render("entropy", 62)
	for name, other := range map[string][]byte{
		"title": render("entropy!", 62),
		"event": render("entropy", 70),
	} {
		frac, err := diffFraction(base, other)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("changed %s: %.4f%% of pixels differ", name, 100*frac)
		if frac <= maxDiffFrac {
			t.Errorf("changed %s: %.4f%% of pixels differ, within tolerance %.4f%%", name, 100*frac, 100*maxDiffFrac)
		}
	}
}

// quiet runs f with stdout discarded: the examples print their summaries.
func quiet(t *testing.T, f func()) {
	old := os.Stdout
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	os.Stdout = null
	defer func() { os.Stdout = old }()
	f()
}

// diffFraction is the fraction of pixels of two PNGs that differ by more
// than pixelTol in some channel; images of different sizes differ entirely.
func diffFraction(a, b []byte) (float64, error) {
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		return 0, fmt.Errorf("new image: %w", err)
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return 0, fmt.Errorf("golden image: %w", err)
	}
	if ia.Bounds() != ib.Bounds() {
		return 1, nil
	}
	r := ia.Bounds()
	diff := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := ia.At(x, y).RGBA()
			r2, g2, b2, _ := ib.At(x, y).RGBA()
			if far(r1, r2) || far(g1, g2) || far(b1, b2) {
				diff++
			}
		}
	}
	return float64(diff) / float64(r.Dx()*r.Dy()), nil
}

// far compares two 16-bit channel values against pixelTol (8-bit).
func far(a, b uint32) bool {
	d := int(a>>8) - int(b>>8)
	return d > pixelTol || d < -pixelTol
}

// writeDiff saves gonum's intensity-scaled difference of two PNGs.
func writeDiff(t *testing.T, path string, a, b []byte) {
	ia, err1 := png.Decode(bytes.NewReader(a))
	ib, err2 := png.Decode(bytes.NewReader(b))
	if err1 != nil || err2 != nil {
		return
	}
	dst := image.NewRGBA(ia.Bounds().Union(ib.Bounds()))
	cmpimg.Diff(dst, ia, ib)
	var buf bytes.Buffer
	if err := png.Encode(&buf, dst); err != nil {
		t.Log(err)
		return
	}
	os.WriteFile(path, buf.Bytes(), 0o644)
}
