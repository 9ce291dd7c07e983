//go:build mpi

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/train"
)

// TestMPIDataParallel runs a short Bandit StarPO run (tiny model, GAE with
// its critic, 3 steps) with the mpi build of ragen as one process and under
// mpirun with 2 and 3 ranks: the metrics are the same bits (decision 41),
// and rank 0 alone writes the run directory. Against the default update
// (no Comm, the packed minibatch's gradient) they agree to 1e-6 relative.
// Run by scripts/mpi-check: go test -tags mpi -run MPI ./cmd/ragen.
func TestMPIDataParallel(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Fatal("mpirun not found: install openmpi-bin libopenmpi-dev (scripts/mpi-check does)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ragen-mpi")
	build := exec.Command("go", "build", "-tags", "mpi", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags mpi: %v\n%s", err, out)
	}
	args := []string{"-env", "bandit", "-preset", "starpo", "-model", "tiny", "-context-length", "512",
		"-groups", "4", "-group-size", "4", "-minibatches", "2", "-steps", "3", "-val", "8", "-val-every", "1",
		"-sft-steps", "10", "-sft-episodes", "32", "-sft-cache-dir", filepath.Join(dir, "cache"), "-quiet"}

	runs := map[int][]metrics.Step{}
	for _, np := range []int{0, 2, 3} { // 0: the binary alone, no mpirun
		runDir := filepath.Join(dir, "run"+strconv.Itoa(np))
		cmd := exec.Command(bin, append([]string{"train", "-run", runDir}, args...)...)
		if np > 0 {
			cmd = exec.Command(mpirun, append([]string{"-np", strconv.Itoa(np), "--allow-run-as-root", "--oversubscribe", bin, "train", "-run", runDir}, args...)...)
		}
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
		}
		runs[np] = readMetrics(t, filepath.Join(runDir, "metrics.jsonl"))
		t.Logf("%d rank(s): %d steps in %.1f s", max(np, 1), len(runs[np])-1, time.Since(start).Seconds())
		if got := timings(runs[np]); got != "" {
			t.Logf("  %s", got)
		}
	}
	want := deterministicSteps(runs[0])
	if len(want) != 4 {
		t.Fatalf("one process wrote %d metric lines, want 4 (step 0 and 3 steps)", len(want))
	}
	for _, np := range []int{2, 3} {
		if got := deterministicSteps(runs[np]); !reflect.DeepEqual(got, want) {
			t.Errorf("%d ranks: metrics differ from one process's:\n%v\n%v", np, got, want)
		}
	}

	c, _, err := parseTrain(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := train.New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	plain := deterministicSteps(tr.History.Steps)
	worst := 0.0
	for i, s := range plain {
		for k, v := range s.Values {
			got, ok := want[i].Values[k]
			if !ok {
				t.Errorf("step %d: %s missing from the data-parallel run", s.Step, k)
				continue
			}
			d := math.Abs(got-v) / max(1, math.Abs(v))
			worst = max(worst, d)
			if d > 1e-6 {
				t.Errorf("step %d: %s = %v data-parallel, %v default update", s.Step, k, got, v)
			}
		}
	}
	t.Logf("largest relative difference from the default update: %.3g", worst)
}

func readMetrics(t *testing.T, path string) []metrics.Step {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []metrics.Step
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var s metrics.Step
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// deterministicSteps drops wall-clock and memory metrics, and rounds the
// rest through JSON as metrics.jsonl does.
func deterministicSteps(steps []metrics.Step) []metrics.Step {
	var out []metrics.Step
	for _, s := range steps {
		v := map[string]float64{}
		for k, x := range s.Values {
			if !strings.HasPrefix(k, "timing_s/") && !strings.HasPrefix(k, "perf/") {
				v[k] = x
			}
		}
		out = append(out, metrics.Step{Step: s.Step, Values: v})
	}
	return out
}

// timings is the mean rollout and update time per step, after the first.
func timings(steps []metrics.Step) string {
	var roll, upd float64
	n := 0
	for _, s := range steps {
		if s.Step < 2 {
			continue
		}
		roll += s.Values[metrics.TimeRollout]
		upd += s.Values[metrics.TimeTrain]
		n++
	}
	if n == 0 {
		return ""
	}
	return "rollout " + strconv.FormatFloat(roll/float64(n), 'f', 3, 64) + " s/step, update " + strconv.FormatFloat(upd/float64(n), 'f', 3, 64) + " s/step"
}
