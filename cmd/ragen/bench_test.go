package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
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

// TestCPUTicks reads this process's CPU time and sees it grow with work.
func TestCPUTicks(t *testing.T) {
	stat := fmt.Sprintf("/proc/%d/stat", os.Getpid())
	if _, err := os.Stat(stat); err != nil {
		t.Skip("no /proc here")
	}
	before, ok := cpuTicks(stat)
	if !ok {
		t.Fatalf("cpuTicks(%s) failed", stat)
	}
	x := 1.0
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
		x = x*1.0000001 + 1e-9
	}
	after, _ := cpuTicks(stat)
	if after-before < 5 || x == 0 {
		t.Errorf("CPU ticks grew by %d over 100 ms of work, want ≥ 5", after-before)
	}
	if _, ok := cpuTicks("/proc/nonexistent/stat"); ok {
		t.Error("cpuTicks of a missing file reported success")
	}
}
