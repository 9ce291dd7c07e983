package main

import (
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		x    []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.x); got != tc.want {
			t.Errorf("median(%v) = %g, want %g", tc.x, got, tc.want)
		}
	}
}

// TestBenchBadFlags: bad flags are errors naming the flag, before any
// benchmark runs.
func TestBenchBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rounds", "-1"}, "-rounds"},
		{[]string{"-presets", "small,huge"}, `-presets: unknown preset "huge"`},
	} {
		err := runBench(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench %v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestBenchConfig: the presets get the benchmark's vocabulary and a value
// head, as in the PyTorch peer.
func TestBenchConfig(t *testing.T) {
	c, err := benchConfig("small")
	if err != nil {
		t.Fatal(err)
	}
	if c.VocabSize != benchVocab || !c.ValueHead {
		t.Fatalf("bench config: vocab %d, value head %v", c.VocabSize, c.ValueHead)
	}
}
