package dsl

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ragen-go/ragen/engine/metrics"
)

// Slurm runs a sweep's runs as the tasks of one Slurm job array (sbatch
// --array=0-(n-1)), each task the kernel's own binary training one run spec
// (`ragen run-spec FILE`) into the run cache, which must therefore be on a
// filesystem the nodes share: set RAGEN_CACHE to a directory there. The
// binary's path must be readable on the nodes too. Runs the cache holds
// already are not submitted again. Zero fields leave Slurm's defaults.
//
//	exp.Executor = ragen.Slurm{Partition: "gpu", CPUs: 8, GPUs: 1, Time: "2:00:00"}
type Slurm struct {
	// Partition to submit to (sbatch --partition); "" = the cluster's default.
	Partition string
	// CPUs per task (--cpus-per-task); the run uses them all.
	CPUs int
	// GPUs per task (--gres=gpu:N); set Experiment.Backend = "cuda" to use them.
	GPUs int
	// Time limit of each task (--time), e.g. "1:00:00".
	Time string
	// Mem per task (--mem), e.g. "8G".
	Mem string
	// Account to charge (--account).
	Account string
	// Parallel bounds the tasks running at once (--array=0-(n-1)%Parallel);
	// 0 = no bound.
	Parallel int
	// Args are more sbatch arguments, e.g. []string{"--qos=short"}.
	Args []string
}

// String is the executor as ParseExecutor reads it ("slurm:partition=debug,cpus=2").
func (s Slurm) String() string {
	var kv []string
	add := func(k, v string) {
		if v != "" && v != "0" {
			kv = append(kv, k+"="+v)
		}
	}
	add("partition", s.Partition)
	add("cpus", strconv.Itoa(s.CPUs))
	add("gpus", strconv.Itoa(s.GPUs))
	add("time", s.Time)
	add("mem", s.Mem)
	add("account", s.Account)
	add("parallel", strconv.Itoa(s.Parallel))
	if len(kv) == 0 {
		return "slurm"
	}
	return "slurm:" + strings.Join(kv, ",")
}

// slurmPoll is how often squeue is asked for the array's state.
var slurmPoll = 2 * time.Second

// slurmCommandTimeout bounds one sbatch, squeue or scancel call.
const slurmCommandTimeout = time.Minute

// slurmLogTail is how many lines of a failed task's log an error shows.
const slurmLogTail = 20

// A slurmTask is one run of the array: task i trains specs[run].
type slurmTask struct {
	run   int
	spec  *RunSpec
	dir   string // the run's directory in the cache
	state string // pending, running, ... (squeue's, lower case); done; failed
	why   string // squeue's reason for a pending task; a failure's cause
	step  int    // the last step in its metrics.jsonl while it runs
	gone  int    // polls since it left the queue without run.json
}

func (t *slurmTask) finished() bool { return t.state == "done" || t.state == "failed" }

func (s Slurm) execute(ctx context.Context, specs []*RunSpec) ([]*Run, error) {
	runs := make([]*Run, len(specs))
	var tasks []*slurmTask
	for i, sp := range specs {
		if r := sp.cached(); r != nil {
			runs[i] = r
			continue
		}
		dir, err := sp.dir()
		if err != nil {
			return runs, err
		}
		tasks = append(tasks, &slurmTask{run: i, spec: sp, dir: dir, state: "submitting"})
	}
	if len(tasks) == 0 {
		return runs, nil
	}
	job, jobDir, err := s.submit(tasks)
	if err != nil {
		return runs, err
	}
	view := newSlurmView(job, len(runs)-len(tasks))
	err = s.watch(ctx, job, jobDir, tasks, view)
	if err != nil && ctx.Err() != nil {
		for _, t := range tasks {
			if !t.finished() {
				t.state, t.why = "cancelled", ""
			}
		}
	}
	view.show(tasks, true)
	if err != nil {
		return runs, err
	}
	var failed []string
	for i, t := range tasks {
		if t.state == "done" {
			r, err := loadRun(t.dir)
			if err == nil {
				r.Name, r.Dir = t.spec.Name, t.dir
				r.History.Name = t.spec.Name
				runs[t.run] = r
				continue
			}
			t.state, t.why = "failed", "its run.json does not load: "+err.Error()
		}
		failed = append(failed, fmt.Sprintf("task %d (job %s_%d), %s: %s\n%s", i, job, i, t.spec.Name, t.why,
			logTail(filepath.Join(jobDir, strconv.Itoa(i)+".log"), slurmLogTail)))
	}
	if len(failed) > 0 {
		return runs, fmt.Errorf("Slurm job %s: %d of %d tasks failed (the others are cached; run the cell again to resubmit only these):\n%s",
			job, len(failed), len(tasks), strings.Join(failed, "\n"))
	}
	return runs, nil
}

// submit writes the tasks' run specs and the batch script to a new folder
// of the run cache, slurm/<time>-<hash of the keys>, and submits the array;
// it returns the job id and the folder. Task i reads i.json and logs to
// i.log.
func (s Slurm) submit(tasks []*slurmTask) (job, jobDir string, err error) {
	if _, err := exec.LookPath("sbatch"); err != nil {
		return "", "", errors.New("Slurm: sbatch is not in PATH: run the kernel where Slurm's commands are (a login node), or set Executor to nil to train here")
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", "", fmt.Errorf("Slurm: cannot find this program's binary for the tasks: %w", err)
	}
	root, err := cacheRoot()
	if err == nil {
		root, err = filepath.Abs(root)
	}
	if err != nil {
		return "", "", err
	}
	h := sha256.New()
	for _, t := range tasks {
		h.Write([]byte(t.spec.Key))
	}
	jobDir = filepath.Join(root, "slurm", time.Now().Format("20060102-150405")+"-"+hex.EncodeToString(h.Sum(nil)[:4]))
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		return "", "", fmt.Errorf("Slurm: %w", err)
	}
	for i, t := range tasks {
		if err := writeSpec(filepath.Join(jobDir, strconv.Itoa(i)+".json"), t.spec); err != nil {
			return "", "", fmt.Errorf("Slurm: %w", err)
		}
	}
	// The task's exit status goes to i.exit: a task that failed is told
	// from one whose run.json the shared filesystem has not shown yet.
	script := fmt.Sprintf(`#!/bin/sh
# A task of a ragen sweep: trains run spec $SLURM_ARRAY_TASK_ID into the run cache.
export RAGEN_CACHE=%s
%s run-spec %s/"$SLURM_ARRAY_TASK_ID".json
status=$?
echo "$status" > %s/"$SLURM_ARRAY_TASK_ID".exit
exit "$status"
`, shellQuote(root), shellQuote(exe), shellQuote(jobDir), shellQuote(jobDir))
	scriptPath := filepath.Join(jobDir, "job.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o755); err != nil {
		return "", "", fmt.Errorf("Slurm: %w", err)
	}
	array := fmt.Sprintf("0-%d", len(tasks)-1)
	if s.Parallel > 0 {
		array += "%" + strconv.Itoa(s.Parallel)
	}
	args := []string{"--parsable", "--job-name=ragen-sweep", "--array=" + array,
		"--output=" + filepath.Join(jobDir, "%a.log")}
	for _, o := range []struct{ flag, v string }{
		{"--partition", s.Partition}, {"--time", s.Time}, {"--mem", s.Mem}, {"--account", s.Account},
	} {
		if o.v != "" {
			args = append(args, o.flag+"="+o.v)
		}
	}
	if s.CPUs > 0 {
		args = append(args, "--cpus-per-task="+strconv.Itoa(s.CPUs))
	}
	if s.GPUs > 0 {
		args = append(args, "--gres=gpu:"+strconv.Itoa(s.GPUs))
	}
	args = append(args, s.Args...)
	args = append(args, scriptPath)
	out, err := slurmCommand(context.Background(), "sbatch", args...)
	if err != nil {
		return "", "", fmt.Errorf("Slurm: the job array was refused: %w (check the Slurm settings %s; sinfo lists partitions)", err, s)
	}
	job, _, _ = strings.Cut(strings.TrimSpace(out), ";") // "123" or "123;cluster"
	if _, err := strconv.Atoi(job); err != nil {
		return "", "", fmt.Errorf("Slurm: sbatch answered %q, not a job id", out)
	}
	return job, jobDir, nil
}

// watch follows the array until every task has finished, showing the
// table after each change. Cancelling ctx cancels the array (scancel) and
// returns once squeue no longer lists it.
func (s Slurm) watch(ctx context.Context, job, jobDir string, tasks []*slurmTask, view *slurmView) error {
	tick := time.NewTicker(slurmPoll)
	defer tick.Stop()
	failures := 0
	for {
		queued, err := squeue(job)
		if err != nil {
			// slurmctld may be busy for a moment; give up after a minute.
			if failures++; time.Duration(failures)*slurmPoll > time.Minute {
				return fmt.Errorf("Slurm: %w (job %s is left as it is: scancel %s cancels it)", err, job, job)
			}
		} else {
			failures = 0
			all := true
			for i, t := range tasks {
				t.update(queued, jobDir, i)
				all = all && t.finished()
			}
			view.show(tasks, false)
			if all {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return scancel(job, ctx.Err())
		case <-tick.C:
		}
	}
}

// update sets the task's state from squeue's entry for it, or, once it has
// left the queue, from its run directory and exit file.
func (t *slurmTask) update(queued map[int]queueEntry, jobDir string, i int) {
	if t.finished() {
		return
	}
	if q, ok := queued[i]; ok {
		t.state, t.why, t.gone = strings.ToLower(q.state), q.reason, 0
		if t.state == "running" {
			t.step = lastStep(filepath.Join(t.dir, "metrics.jsonl"))
		}
		return
	}
	if _, err := os.Stat(filepath.Join(t.dir, "run.json")); err == nil {
		t.state, t.why, t.step = "done", "", t.spec.Config.Steps
		return
	}
	if b, err := os.ReadFile(filepath.Join(jobDir, strconv.Itoa(i)+".exit")); err == nil {
		if code := strings.TrimSpace(string(b)); code != "0" {
			t.state, t.why = "failed", "exit status "+code
			return
		}
	}
	// Out of the queue without run.json: wait a few polls for a shared
	// filesystem to show it, then count the task as failed (cancelled,
	// out of time or memory: the log says).
	if t.gone++; t.gone > 3 {
		t.state, t.why = "failed", "left the queue without finishing (cancelled, over its time or memory limit?)"
	}
}

// A queueEntry is one task as squeue lists it.
type queueEntry struct{ state, reason string }

// squeue lists the array's tasks still in the queue by task id. A job the
// controller no longer knows has none.
func squeue(job string) (map[int]queueEntry, error) {
	out, err := slurmCommand(context.Background(), "squeue", "--noheader", "--array", "--jobs="+job, "--format=%K|%T|%r")
	if err != nil {
		if strings.Contains(err.Error(), "Invalid job id") {
			return map[int]queueEntry{}, nil
		}
		return nil, err
	}
	queued := map[int]queueEntry{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.SplitN(line, "|", 3)
		if len(f) < 3 {
			continue
		}
		e := queueEntry{f[1], f[2]}
		if id, err := strconv.Atoi(f[0]); err == nil {
			queued[id] = e
		} else if lo, hi, ok := taskRange(f[0]); ok { // a pending array not yet split
			for id := lo; id <= hi; id++ {
				queued[id] = e
			}
		}
	}
	return queued, nil
}

// taskRange reads squeue's "0-3" or "2-3%1" of a pending array.
func taskRange(s string) (lo, hi int, ok bool) {
	s, _, _ = strings.Cut(s, "%")
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	return lo, hi, err1 == nil && err2 == nil && lo <= hi
}

// scancel cancels the job and waits (at most a minute) until squeue no
// longer lists it; the error says so, wrapping cause (ctx's error, so that
// an interrupt reads as one).
func scancel(job string, cause error) error {
	if _, err := slurmCommand(context.Background(), "scancel", job); err != nil {
		return fmt.Errorf("interrupted, but scancel %s failed: %v: %w", job, err, cause)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		q, err := squeue(job)
		if err == nil && len(q) == 0 {
			return fmt.Errorf("interrupted: Slurm job %s cancelled: %w", job, cause)
		}
		time.Sleep(slurmPoll / 4)
	}
	return fmt.Errorf("interrupted: Slurm job %s cancelled (scancel), still listed by squeue after a minute: %w", job, cause)
}

// slurmCommand runs a Slurm command and returns its standard output; an
// error carries its standard error.
func slurmCommand(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, slurmCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("%s: %s", name, msg)
	}
	return stdout.String(), nil
}

// lastStep is the step of the last line of a metrics.jsonl; 0 without one.
func lastStep(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	b = bytes.TrimRight(b, "\n")
	var s metrics.Step
	if json.Unmarshal(b[bytes.LastIndexByte(b, '\n')+1:], &s) != nil {
		return 0
	}
	return s.Step
}

// logTail is the last n lines of a task's log, indented.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "    (no log: " + err.Error() + ")"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, "    "+sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	if len(lines) == 0 {
		return "    (" + path + " is empty)"
	}
	return "    " + path + ":\n" + strings.Join(lines, "\n")
}

// shellQuote quotes s for sh: in single quotes, each quote in s closed,
// escaped and reopened.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// slurmView shows the array's table in the cell: one display updated in
// place, or, without a display (ragen script, tests), a line whenever the
// counts change.
type slurmView struct {
	job    string
	cached int // runs the cache held, not submitted
	id     string
	last   string
}

func newSlurmView(job string, cached int) *slurmView {
	return &slurmView{job: job, cached: cached, id: fmt.Sprintf("ragen-slurm-%s-%d", job, time.Now().UnixNano())}
}

func (v *slurmView) show(tasks []*slurmTask, final bool) {
	counts := map[string]int{}
	t := &Table{Columns: []string{"task", "run", "state", "step"}}
	for i, tk := range tasks {
		counts[tk.state]++
		state := tk.state
		if tk.why != "" && tk.why != "None" && tk.state != "done" {
			state += " (" + tk.why + ")"
		}
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%s_%d", v.job, i), tk.spec.Name, state,
			fmt.Sprintf("%d/%d", tk.step, tk.spec.Config.Steps)})
	}
	active := len(tasks) - counts["pending"] - counts["done"] - counts["failed"] - counts["cancelled"]
	t.Title = fmt.Sprintf("Slurm job %s: %d pending, %d running, %d done, %d failed", v.job,
		counts["pending"], active, counts["done"], counts["failed"])
	if n := counts["cancelled"]; n > 0 {
		t.Title += fmt.Sprintf(", %d cancelled (scancel)", n)
	}
	if v.cached > 0 {
		t.Title += fmt.Sprintf(" (%d more runs from the cache)", v.cached)
	}
	hookMu.RLock()
	fn := displayFn
	hookMu.RUnlock()
	if fn != nil {
		text := t.String()
		if text != v.last || final {
			fn(t.MIMEBundle(), v.id)
			v.last = text
		}
		return
	}
	if t.Title != v.last {
		fmt.Fprintln(os.Stdout, t.Title)
		v.last = t.Title
	}
}
