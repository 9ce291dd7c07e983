package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragen-go/ragen/notebook"
)

var binary string // ragen-run built once for the end-to-end tests

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ragen-run-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "ragen-run")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const smoke = "../../notebook/testdata/smoke.ipynb"

// ragenRun runs the binary and returns its exit status and stderr.
func ragenRun(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "RAGEN_CACHE="+t.TempDir())
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// writeNotebook writes a notebook of code cells (and the given metadata).
func writeNotebook(t *testing.T, dir, name, meta string, cells ...string) string {
	t.Helper()
	var cs []string
	for _, src := range cells {
		s, _ := json.Marshal(src)
		cs = append(cs, `{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null, "source": `+string(s)+`}`)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(`{"nbformat": 4, "nbformat_minor": 4, "metadata": `+meta+`, "cells": [`+strings.Join(cs, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// summaryRow is "cells failed" from the summary line of a notebook.
func summaryRow(stderr, name string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == name {
			return f[1] + " " + f[2]
		}
	}
	return ""
}

func validate(t *testing.T, path string) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import nbformat").Run(); err != nil {
		t.Skip("nbformat validation skipped: /usr/bin/python3 cannot import nbformat (apt-get install -y python3-nbformat)")
	}
	if out, err := exec.Command("/usr/bin/python3", "-c", `import sys, nbformat; nbformat.validate(nbformat.read(sys.argv[1], 4))`, path).CombinedOutput(); err != nil {
		t.Fatalf("nbformat rejects %s: %s", path, out)
	}
}

func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	out, junit, html := filepath.Join(dir, "out.ipynb"), filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.html")
	before, _ := os.ReadFile(smoke)

	code, stderr := ragenRun(t, "-p", "steps=5", smoke, "--allow-errors", "-o", out, "--junit", junit, "--html", html)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, want := range []string{"cell 1/6 [", "cell 6/6 [", "FAILED"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if row := summaryRow(stderr, smoke); row != "6 1" {
		t.Errorf("summary row %q, want cells 6, failed 1:\n%s", row, stderr)
	}
	validate(t, out)
	nb, err := notebook.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := nb.Cells[3].Outputs[0].Text; got != "steps 5 name bandit\nrate 0.50\n" {
		t.Errorf("print cell: %q", got)
	}
	if after, _ := os.ReadFile(smoke); !bytes.Equal(before, after) {
		t.Error("the input notebook changed")
	}
	for _, f := range []string{junit, html} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}

	// --check against the notebook just written: the same outputs.
	if code, stderr := ragenRun(t, "--check", "--quiet", "--allow-errors", out); code != 0 {
		t.Errorf("--check of an unchanged notebook: exit %d\n%s", code, stderr)
	}
	// A stored output that differs is a diff and exit 1.
	b, _ := os.ReadFile(out)
	changed := filepath.Join(dir, "changed.ipynb")
	os.WriteFile(changed, bytes.Replace(b, []byte(`"steps 5 name bandit\n"`), []byte(`"steps 4 name bandit\n"`), 1), 0o644)
	code, stderr = ragenRun(t, "--check", "--quiet", "--allow-errors", changed)
	want := "outputs differ from the stored ones\n--- stored\n+++ executed\n  [stdout]\n- steps 4 name bandit\n+ steps 5 name bandit\n  rate 0.50\n"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("--check of a changed notebook: exit %d, want 1 and %q in\n%s", code, want, stderr)
	}
	// Within --rtol it passes.
	if code, stderr := ragenRun(t, "--check", "--rtol", "0.3", "--quiet", "--allow-errors", changed); code != 0 {
		t.Errorf("--check --rtol 0.3: exit %d\n%s", code, stderr)
	}
}

// A failed cell: exit 1, the cell and its error on stderr, the partial
// notebook written.
func TestFailedCell(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.ipynb")
	code, stderr := ragenRun(t, "--quiet", smoke, "-o", out)
	if code != 1 || !strings.Contains(stderr, "smoke.ipynb: cell 5 [6e48f3a8] failed: panic: reflect: slice index out of range\n    panic: reflect: slice index out of range") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	nb, err := notebook.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if nb.Cells[4].Outputs[0].EName != "panic" || nb.Cells[5].ExecutionCount != nil {
		t.Errorf("partial notebook: %+v, later cell count %v", nb.Cells[4].Outputs, nb.Cells[5].ExecutionCount)
	}
	validate(t, out)
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "bad.ipynb")
	os.WriteFile(notJSON, []byte("{\"cells\": "), 0o644)
	v3 := filepath.Join(dir, "v3.ipynb")
	os.WriteFile(v3, []byte(`{"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": []}`), 0o644)
	py := writeNotebook(t, dir, "py.ipynb", `{"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}`, "print(1)")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{notJSON}, "ragen-run: " + notJSON + ": not a notebook: invalid JSON at line 1, column 10: unexpected end of JSON input\n"},
		{[]string{v3}, "ragen-run: " + v3 + ": nbformat 3 is not supported: ragen-run reads nbformat 4"},
		{[]string{py}, `ragen-run: ` + py + `: the notebook's kernel is "python3" (language "python"), not "ragen-go"`},
		{[]string{filepath.Join(dir, "missing.ipynb")}, "no such file or directory"},
		{[]string{"-p", "stepz=5", smoke}, `ragen-run: ` + smoke + `: -p stepz=5: "stepz" is not declared in the parameters cell (it declares: name, rate, steps)`},
		{[]string{"-p", "steps=five", smoke}, `-p steps=five: steps is declared as int in the parameters cell (default 3); "five" is not an integer of type int`},
		{[]string{smoke, smoke, "-o", "x.ipynb"}, "ragen-run: -o takes one notebook; with several use --inplace or --output-dir DIR\n"},
		{[]string{}, "ragen-run: no notebook given\n"},
		{[]string{"--nope", smoke}, "flag provided but not defined: -nope"},
	} {
		code, stderr := ragenRun(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("ragen-run %v: exit %d, want 2 and %q in\n%s", tc.args, code, tc.want, stderr)
		}
	}
}

// A cell that never returns fails at --timeout, which stops its notebook;
// the next notebook still runs, and the summary covers both.
func TestTimeoutAndSeveralNotebooks(t *testing.T) {
	dir := t.TempDir()
	hang := writeNotebook(t, dir, "hang.ipynb", `{}`, `import "fmt"`, "for {\n}", `fmt.Println("never")`)
	ok := writeNotebook(t, dir, "ok.ipynb", `{}`, `import "fmt"`, `fmt.Println("fine")`)
	outDir := filepath.Join(dir, "out")
	start := time.Now()
	code, stderr := ragenRun(t, "--timeout", "300ms", "--quiet", "--output-dir", outDir, hang, ok)
	if code != 1 || time.Since(start) > 30*time.Second {
		t.Fatalf("exit %d after %s:\n%s", code, time.Since(start), stderr)
	}
	for _, want := range []string{
		"hang.ipynb: cell 2 [", "] failed: TimeoutError: cell execution timed out after 300ms",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if a, b := summaryRow(stderr, hang), summaryRow(stderr, ok); a != "2 1" || b != "2 0" {
		t.Errorf("summary rows %q, %q:\n%s", a, b, stderr)
	}
	for _, name := range []string{"hang.ipynb", "ok.ipynb"} {
		validate(t, filepath.Join(outDir, name))
	}
}

// Ctrl-C interrupts the running cell, writes the partial notebook and
// exits 130; --inplace replaces the input atomically.
func TestInterrupt(t *testing.T) {
	dir := t.TempDir()
	p := writeNotebook(t, dir, "hang.ipynb", `{}`, `import "fmt"`, `fmt.Println("before")`, "for {\n}", `fmt.Println("never")`)
	cmd := exec.Command(binary, "--inplace", p)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var log strings.Builder
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "cell 3/4") {
			time.Sleep(100 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGINT)
		}
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130:\n%s", err, log.String())
	}
	nb, err := notebook.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if nb.Cells[1].Outputs[0].Text != "before\n" || nb.Cells[2].Outputs[0].EName != "Interrupted" || nb.Cells[3].ExecutionCount != nil {
		t.Errorf("partial notebook: %+v %+v", nb.Cells[1].Outputs, nb.Cells[2].Outputs)
	}
	validate(t, p)
}

// A training cell reports its progress, one line per step, on stderr.
func TestTrainingProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	dir := t.TempDir()
	p := writeNotebook(t, dir, "train.ipynb", `{}`, `import "ragen"`, `run := ragen.Experiment{
	Env: ragen.Bandit(), Model: "tiny", Groups: 2, GroupSize: 2, TokensPerTurn: 160, Steps: 1,
	WarmStart: ragen.WarmStart{Steps: 2, Episodes: 8, BatchSize: 4}, NoValidation: true, VocabSize: 300,
}.Train()
run.Steps()`)
	out := filepath.Join(dir, "out.ipynb")
	code, stderr := ragenRun(t, p, "-o", out)
	if code != 0 || !strings.Contains(stderr, "  step   1  reward ") || !strings.Contains(stderr, "warm start") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	nb, err := notebook.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := nb.Cells[1].Outputs; len(got) != 1 || got[0].Data["text/plain"] != "1" {
		t.Errorf("training cell outputs: %+v", got)
	}
}

// TestReadmeOutputs: the files the README's commands write (-o, --html) are
// ignored by git, so that following the README leaves the checkout clean,
// and their folder need not exist.
func TestReadmeOutputs(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, line := range strings.Split(string(readme), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(line, "./cmd/ragen-run") {
			for i := 0; i+1 < len(f); i++ {
				if f[i] == "-o" || f[i] == "--html" {
					outs = append(outs, f[i+1])
				}
			}
		}
	}
	for _, m := range regexp.MustCompile("`--html ([^`]+)`").FindAllStringSubmatch(string(readme), -1) {
		outs = append(outs, m[1])
	}
	if len(outs) < 2 {
		t.Fatalf("found %v in the README; want its -o and --html files", outs)
	}
	for _, out := range outs {
		cmd := exec.Command("git", "check-ignore", "-q", "--no-index", out)
		cmd.Dir = "../.."
		if err := cmd.Run(); err != nil {
			t.Errorf("the README writes %s, which git does not ignore (git check-ignore: %v)", out, err)
		}
	}
	dir := t.TempDir()
	nb := writeNotebook(t, dir, "one.ipynb", `{}`, "x := 1\nx")
	out, html := filepath.Join(dir, "out", "one.ipynb"), filepath.Join(dir, "report", "one.html")
	if code, stderr := ragenRun(t, "--quiet", nb, "-o", out, "--html", html); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, f := range []string{out, html} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
}

// slurmNotebook is a 2-value × 2-seed sweep in a cell, and a cell that
// prints every run's key and metrics at full precision.
func slurmNotebook(t *testing.T, steps int) string {
	return writeNotebook(t, t.TempDir(), "sweep.ipynb", `{}`,
		`import (
	"fmt"
	"ragen"
)`,
		fmt.Sprintf(`exp := ragen.Experiment{
	Env: ragen.Bandit(), Model: "tiny", Groups: 2, GroupSize: 2, TokensPerTurn: 160, Steps: %d,
	WarmStart: ragen.WarmStart{Steps: 2, Episodes: 8, BatchSize: 4}, NoValidation: true, VocabSize: 300,
	Algo: ragen.GRPO(),
}
c := ragen.SweepSeeds(exp, 2, "ActorLR", 1e-4, 3e-3)`, steps),
		`for _, r := range c.Runs() {
	fmt.Println(r.Name, r.Key)
	for _, m := range []string{"rollout/reward_mean", "actor/entropy", "actor/grad_norm", "actor/pg_loss"} {
		fmt.Println(" ", m, r.Metric(m).Values)
	}
}`,
		`c.Table()`)
}

// cellText is the text a cell printed, its outputs' text/plain and its
// error.
func cellText(t *testing.T, path string, cell int) string {
	t.Helper()
	nb, err := notebook.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, o := range nb.Cells[cell].Outputs {
		b.WriteString(o.Text + o.EValue)
		if s, ok := o.Data["text/plain"].(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

// A sweep in a notebook cell, run by ragen-run with RAGEN_EXECUTOR set to
// Slurm, trains as one job array and prints what the local sweep prints,
// bit for bit; interrupting ragen-run cancels the array. Needs a Slurm
// cluster (scripts/slurm-check).
func TestSlurmNotebook(t *testing.T) {
	if os.Getenv("RAGEN_SLURM_TEST") == "" {
		t.Skip("needs a Slurm cluster: scripts/slurm-check starts one on localhost and sets RAGEN_SLURM_TEST=1")
	}
	run := func(nb, cache, executor string) (int, string) {
		cmd := exec.Command(binary, "--quiet", "--inplace", nb)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Env = append(os.Environ(), "RAGEN_CACHE="+cache, "RAGEN_EXECUTOR="+executor)
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), stderr.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, stderr.String()
	}
	local, remote := slurmNotebook(t, 2), slurmNotebook(t, 2)
	if code, stderr := run(local, t.TempDir(), "local"); code != 0 {
		t.Fatalf("local: exit %d\n%s", code, stderr)
	}
	cache := t.TempDir()
	if code, stderr := run(remote, cache, "slurm:cpus=1"); code != 0 {
		t.Fatalf("slurm: exit %d\n%s", code, stderr)
	}
	if jobs, _ := filepath.Glob(filepath.Join(cache, "slurm", "*", "job.sh")); len(jobs) != 1 {
		t.Errorf("%d job arrays, want 1: %v", len(jobs), jobs)
	}
	for _, cell := range []int{2, 3} {
		got, want := cellText(t, remote, cell), cellText(t, local, cell)
		if got != want || !strings.Contains(want, "ActorLR=0.003") {
			t.Errorf("cell %d on Slurm:\n%s\nhere:\n%s", cell+1, got, want)
		}
	}
	if s := cellText(t, remote, 1); !strings.Contains(s, "0 pending, 0 running, 4 done, 0 failed") {
		t.Errorf("the sweep cell's table: %q", s)
	}

	// Interrupted once a task has trained a step: ragen-run exits 130
	// and the array is gone from the queue.
	long := slurmNotebook(t, 500)
	cache = t.TempDir()
	cmd := exec.Command(binary, "--quiet", "--inplace", long)
	cmd.Env = append(os.Environ(), "RAGEN_CACHE="+cache, "RAGEN_EXECUTOR=slurm:cpus=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if m, _ := filepath.Glob(filepath.Join(cache, "runs", "*", "metrics.jsonl")); len(m) > 0 {
			break
		}
		if i == 1200 {
			cmd.Process.Kill()
			t.Fatal("no task trained a step in 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130:\n%s", err, stderr.String())
	}
	if s := cellText(t, long, 1); !strings.Contains(s, "4 cancelled (scancel)") {
		t.Errorf("the interrupted cell says %q", s)
	}
	out, _ := exec.Command("squeue", "--noheader", "--name=ragen-sweep").CombinedOutput()
	if strings.TrimSpace(string(out)) != "" {
		t.Errorf("squeue still lists the array:\n%s", out)
	}
}
