package dsl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragen-go/ragen/engine/metrics"
)

// TestMain makes this test binary a task of the Slurm tests' job arrays:
// Slurm runs os.Executable() run-spec FILE, which here is the test binary.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "run-spec" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		_, err := TrainSpecFile(ctx, os.Args[2])
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "run-spec:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// slurmExp is a 2-step run with every kind of expression a spec carries:
// reward, filter and loss mask.
func slurmExp() Experiment {
	e := tinyExp()
	e.Fresh, e.Steps = false, 2
	e.Reward = Reward(`success ? 1 : reward - 0.01 * think_tokens`)
	e.Filter = Filter(`std + 0.1 * mean`, TopP(0.5))
	e.LossMask = `span == "answer" || turn == turns`
	return e
}

// steadyHistory is a run's steps without the wall-clock timings, which are
// the only values allowed to differ between two trainings of one run.
func steadyHistory(h metrics.History) []metrics.Step {
	var out []metrics.Step
	for _, s := range h.Steps {
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

// sameRuns fails unless the two lists are the same runs: names, keys and
// every step's metrics bit for bit (NaN equal to NaN), events and samples.
func sameRuns(t *testing.T, what string, got, want []*Run) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d runs, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g == nil {
			t.Fatalf("%s: run %d (%s) missing", what, i, w.Name)
		}
		if g.Name != w.Name || g.Key != w.Key {
			t.Errorf("%s: run %d is %s (key %s), want %s (key %s)", what, i, g.Name, g.Key, w.Name, w.Key)
		}
		gs, ws := steadyHistory(g.History), steadyHistory(w.History)
		if len(gs) != len(ws) || len(ws) == 0 {
			t.Fatalf("%s: %s has %d steps, want %d", what, w.Name, len(gs), len(ws))
		}
		for j := range ws {
			if fmt.Sprint(gs[j]) != fmt.Sprint(ws[j]) { // Sprint: NaN equals NaN
				t.Errorf("%s: %s step %d differs:\n got %v\nwant %v", what, w.Name, ws[j].Step, gs[j], ws[j])
			}
		}
		// As run.json keeps them: a run loaded from the cache has empty
		// slices where the trained one has nil, and U+FFFD for the invalid
		// UTF-8 a tiny policy samples.
		ge, we := cachedJSON(g.History.Events, g.History.Samples), cachedJSON(w.History.Events, w.History.Samples)
		if !bytes.Equal(ge, we) {
			t.Errorf("%s: %s: events or samples differ", what, w.Name)
		}
		gc, gerr := os.ReadFile(filepath.Join(g.Dir, "config.json"))
		wc, werr := os.ReadFile(filepath.Join(w.Dir, "config.json"))
		if gerr != nil || werr != nil || !bytes.Equal(gc, wc) {
			t.Errorf("%s: %s: config.json differs (%v, %v)", what, w.Name, gerr, werr)
		}
	}
}

// cachedJSON is v as written to run.json and read back.
func cachedJSON(v ...any) []byte {
	b, _ := json.Marshal(v)
	var x any
	json.Unmarshal(b, &x)
	b, _ = json.Marshal(x)
	return b
}

// A spec written for a task and read back trains the run the experiment
// trains here, under the same key, bit for bit; the expressions are
// compiled again from their sources.
func TestSpecFileTrainsTheSameRun(t *testing.T) {
	exp := slurmExp()
	t.Setenv("RAGEN_CACHE", t.TempDir())
	local, err := exp.TrainContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	spec, err := exp.Spec()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "0.json")
	if err := writeSpec(path, spec); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RAGEN_CACHE", t.TempDir())
	remote, err := TrainSpecFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if remote.Cached {
		t.Fatal("the task found the run cached in a new cache")
	}
	sameRuns(t, "spec file", []*Run{remote}, []*Run{local})
	// A second task finds the run in the cache.
	again, err := TrainSpecFile(context.Background(), path)
	if err != nil || !again.Cached {
		t.Fatalf("second task: cached %v, %v", again != nil && again.Cached, err)
	}
}

// A spec that no longer hashes to its key is refused, and so is a custom
// environment, whose code cannot leave the process.
func TestSpecFileRefusals(t *testing.T) {
	spec, err := slurmExp().Spec()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "0.json")
	if err := writeSpec(path, spec); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	edited := strings.Replace(string(b), `"steps": 2,`, `"steps": 3,`, 1)
	if edited == string(b) {
		t.Fatal("no steps field to edit")
	}
	os.WriteFile(path, []byte(edited), 0o644)
	if _, err := readSpec(path); err == nil || !strings.Contains(err.Error(), "not to its key "+spec.Key) {
		t.Errorf("edited spec: %v", err)
	}

	e := slurmExp()
	e.Env = Custom("coin", func() Env { return nil })
	cs, err := e.Spec()
	if err != nil {
		t.Fatal(err)
	}
	err = writeSpec(filepath.Join(dir, "1.json"), cs)
	if err == nil || !strings.Contains(err.Error(), `the environment "coin" is defined in a cell`) {
		t.Errorf("custom environment: %v", err)
	}
}

func TestParseExecutor(t *testing.T) {
	for _, s := range []string{"slurm", "slurm:partition=debug,cpus=2,gpus=1,time=1:00:00,mem=4G,account=lab,parallel=3"} {
		ex, err := ParseExecutor(s)
		if err != nil || ex == nil || ex.String() != s {
			t.Errorf("ParseExecutor(%q) = %v, %v; want it back", s, ex, err)
		}
	}
	if ex, err := ParseExecutor("local"); ex != nil || err != nil {
		t.Errorf("local: %v, %v", ex, err)
	}
	for s, want := range map[string]string{
		"k8s":                   `executor "k8s": want local or slurm[`,
		"slurm:cpus=two":        `executor "slurm:cpus=two": cpus must be a number ≥ 0 (got "two")`,
		"slurm:queue=x":         `executor "slurm:queue=x": unknown setting "queue" (partition, cpus, gpus, time, mem, account, parallel)`,
		"slurm:partition":       `executor "slurm:partition": "partition" is not key=value`,
		"local:partition=debug": `executor "local:partition=debug": local takes no settings`,
	} {
		if _, err := ParseExecutor(s); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseExecutor(%q): %v, want %s...", s, err, want)
		}
	}
}

func TestSqueueTaskRange(t *testing.T) {
	for s, want := range map[string][2]int{"0-3": {0, 3}, "2-3%1": {2, 3}} {
		lo, hi, ok := taskRange(s)
		if !ok || lo != want[0] || hi != want[1] {
			t.Errorf("taskRange(%q) = %d, %d, %v", s, lo, hi, ok)
		}
	}
	if _, _, ok := taskRange("7"); ok {
		t.Error(`taskRange("7") reads a range`)
	}
}

// slurmTest skips unless a Slurm cluster is there to submit to
// (scripts/slurm-check starts one on localhost and sets RAGEN_SLURM_TEST).
func slurmTest(t *testing.T) {
	t.Helper()
	if os.Getenv("RAGEN_SLURM_TEST") == "" {
		t.Skip("needs a Slurm cluster: scripts/slurm-check starts one on localhost and sets RAGEN_SLURM_TEST=1")
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		t.Fatal("RAGEN_SLURM_TEST is set but sbatch is not in PATH")
	}
	old := slurmPoll
	slurmPoll = 500 * time.Millisecond
	t.Cleanup(func() { slurmPoll = old })
}

// A 2-value × 2-seed sweep as one Slurm job array gives the runs of the
// same sweep trained here, bit for bit and under the same keys; run again,
// it submits nothing and loads them from the cache.
func TestSlurmSweepEqualsLocal(t *testing.T) {
	slurmTest(t)
	exp := slurmExp()
	t.Setenv("RAGEN_CACHE", t.TempDir())
	local, err := SweepSeedsContext(context.Background(), exp, 2, "ActorLR", 1e-4, 3e-3)
	if err != nil {
		t.Fatal(err)
	}

	cache := t.TempDir()
	t.Setenv("RAGEN_CACHE", cache)
	exp.Executor = Slurm{CPUs: 1, Time: "10:00"}
	start := time.Now()
	remote, err := SweepSeedsContext(context.Background(), exp, 2, "ActorLR", 1e-4, 3e-3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("4 runs as a Slurm job array in %s", time.Since(start).Round(time.Millisecond))
	sameRuns(t, "Slurm sweep", remote.Runs(), local.Runs())
	if got, want := remote.Table().String(), local.Table().String(); got != want {
		t.Errorf("tables differ:\n%s\nwant\n%s", got, want)
	}
	jobs, _ := filepath.Glob(filepath.Join(cache, "slurm", "*"))
	if len(jobs) != 1 {
		t.Fatalf("%d job folders, want 1 job array: %v", len(jobs), jobs)
	}
	logs, _ := filepath.Glob(filepath.Join(jobs[0], "*.log"))
	if len(logs) != 4 {
		t.Errorf("%d task logs, want 4: %v", len(logs), logs)
	}

	again, err := SweepSeedsContext(context.Background(), exp, 2, "ActorLR", 1e-4, 3e-3)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range again.Runs() {
		if !r.Cached {
			t.Errorf("resubmitted sweep trained %s again", r.Name)
		}
	}
	if jobs, _ := filepath.Glob(filepath.Join(cache, "slurm", "*")); len(jobs) != 1 {
		t.Errorf("the resubmitted sweep submitted a job: %v", jobs)
	}
	sameRuns(t, "resubmitted", again.Runs(), local.Runs())
}

// Interrupting a sweep cancels its job array: the call returns the
// interrupt, and squeue no longer lists the job.
func TestSlurmInterruptCancelsArray(t *testing.T) {
	slurmTest(t)
	cache := lingeringDir(t)
	t.Setenv("RAGEN_CACHE", cache)
	exp := slurmExp()
	exp.Steps = 500
	exp.Executor = Slurm{CPUs: 1}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // interrupt once a task has written a step
		for ctx.Err() == nil {
			if m, _ := filepath.Glob(filepath.Join(cache, "runs", "*", "metrics.jsonl")); len(m) > 0 {
				cancel()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	_, err := SeedsContext(ctx, exp, 3)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("interrupted sweep: %v", err)
	}
	var job string
	if _, err := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "Slurm job "):], "Slurm job %s", &job); err != nil {
		t.Fatalf("no job id in %q", err)
	}
	out, qerr := exec.Command("squeue", "--noheader", "--jobs="+job).CombinedOutput()
	if qerr == nil && strings.TrimSpace(string(out)) != "" {
		t.Errorf("squeue still lists job %s:\n%s", job, out)
	}
	if runs, _ := filepath.Glob(filepath.Join(cache, "runs", "*", "run.json")); len(runs) != 0 {
		t.Errorf("cancelled runs cached: %v", runs)
	}
}

// A task whose run fails is reported with its job id and the tail of its
// log, which holds the run's error.
func TestSlurmFailedTask(t *testing.T) {
	slurmTest(t)
	t.Setenv("RAGEN_CACHE", t.TempDir())
	exp := slurmExp()
	exp.Reward = Reward(`1 / (num_turns - num_turns)`) // +Inf: the run fails
	exp.Executor = Slurm{CPUs: 1}
	_, err := SeedsContext(context.Background(), exp, 1)
	if err == nil {
		t.Fatal("a failing run succeeded on Slurm")
	}
	for _, want := range []string{"1 of 1 tasks failed", "task 0 (job ", "_0), bandit() seed 1: exit status 1", "0.log:", "reward expression"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// lingeringDir is a temporary directory for a test whose Slurm tasks may
// still be writing into it when the test ends: a cancelled task saves its
// interrupted run's checkpoint (decision 46), and with proctrack/linuxproc
// squeue can stop listing the job while that process is finishing. The
// cleanup retries the removal for up to 30 s instead of failing the test on
// "directory not empty".
func lingeringDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ragen-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("removing %s: %v", dir, err)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	return dir
}
