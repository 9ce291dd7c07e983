package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/train"
	"github.com/ragen-go/ragen/internal/knob"
)

// TestTrainInit: -init starts from a checkpoint of ours without a warm
// start unless -sft-steps asks for one, and names a conflict with
// -pretrained.
func TestTrainInit(t *testing.T) {
	t.Setenv("RAGEN_CACHE", t.TempDir())
	tiny := []string{"-env", "bandit", "-model", "tiny", "-steps", "1", "-groups", "2", "-group-size", "2",
		"-val", "0", "-sft-episodes", "8", "-quiet"}
	first := filepath.Join(t.TempDir(), "first")
	if err := runTrain(append(tiny, "-sft-steps", "4", "-run", first)); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(first, "checkpoints", "step-000001", "policy")
	for _, tc := range []struct {
		extra    []string
		sftSteps float64
	}{{nil, 0}, {[]string{"-sft-steps", "2"}, 2}} {
		dir := filepath.Join(t.TempDir(), "next")
		args := append(append(append([]string{}, tiny...), "-init", ckpt, "-run", dir), tc.extra...)
		if err := runTrain(args); err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Init      string `json:"init"`
			WarmStart struct {
				Steps float64 `json:"steps"`
			} `json:"warm_start"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Init != ckpt || cfg.WarmStart.Steps != tc.sftSteps {
			t.Errorf("%v: init %q, warm-start steps %v; want %q, %v", tc.extra, cfg.Init, cfg.WarmStart.Steps, ckpt, tc.sftSteps)
		}
	}
	err := runTrain(append(tiny, "-init", ckpt, "-pretrained", ckpt))
	if err == nil || !strings.Contains(err.Error(), "give one") {
		t.Errorf("-init with -pretrained: error %v, want one asking for one of them", err)
	}
}

// TestTrainTemperatures: -temperature and -val-temperature reach the run's
// config, and a training temperature of 0 is refused by name.
func TestTrainTemperatures(t *testing.T) {
	t.Setenv("RAGEN_CACHE", t.TempDir())
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"-env", "bandit", "-model", "tiny", "-steps", "1", "-groups", "2", "-group-size", "2",
		"-val", "2", "-sft-steps", "2", "-sft-episodes", "8", "-quiet"}
	if err := runTrain(slices.Concat(args, []string{"-run", dir, "-temperature", "0.7", "-val-temperature", "0"})); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Temperature    float32 `json:"temperature"`
		ValTemperature float32 `json:"val_temperature"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Temperature != 0.7 || cfg.ValTemperature != 0 {
		t.Errorf("config temperature %v, val_temperature %v; want 0.7, 0", cfg.Temperature, cfg.ValTemperature)
	}
	err = runTrain(slices.Concat(args, []string{"-temperature", "0"}))
	if err == nil || !strings.Contains(err.Error(), "temperature: must be > 0") {
		t.Errorf("-temperature 0: error %v, want one saying it must be > 0", err)
	}
}

// TestWarmStartLine: the warm-start phase line says what the phase does.
func TestWarmStartLine(t *testing.T) {
	c := train.Default()
	for _, tc := range []struct {
		init  string
		steps int
		want  string
	}{{"", 500, "(cached after the first run)"}, {"ckpt", 300, "for 300 steps (not cached)"}, {"ckpt", 0, "loading the model..."}} {
		c.Init, c.WarmStart.Steps = tc.init, tc.steps
		if got := warmStartLine(&c); !strings.Contains(got, tc.want) {
			t.Errorf("init %q, %d steps: %q, want it to contain %q", tc.init, tc.steps, got, tc.want)
		}
	}
}

// TestPrinterWarmStart: the warm start's fine-tuning prints its first step,
// its last, and one step per 10 s of its own elapsed time in between, each
// with the loss and the ETA; -quiet prints none of them.
func TestPrinterWarmStart(t *testing.T) {
	feed := func(p *printer) {
		for i := 1; i <= 100; i++ { // one step a second
			p.WarmStart(train.WarmStartProgress{Step: i, Steps: 100, Loss: 3 - float64(i)/50, Elapsed: time.Duration(i) * time.Second})
		}
	}
	var b strings.Builder
	feed(&printer{out: &b})
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	var steps []string
	for _, l := range lines {
		steps = append(steps, strings.Fields(l)[2])
	}
	if want := "1/100 11/100 21/100 31/100 41/100 51/100 61/100 71/100 81/100 91/100 100/100"; strings.Join(steps, " ") != want {
		t.Errorf("printed steps %v, want %s:\n%s", steps, want, b.String())
	}
	for i, want := range map[int]string{
		0:  "warm start 1/100  loss 2.9800  elapsed 1s  ETA 1m39s",
		5:  "warm start 51/100  loss 1.9800  elapsed 51s  ETA 49s",
		10: "warm start 100/100  loss 1.0000  elapsed 1m40s  ETA 0s",
	} {
		if i < len(lines) && lines[i] != want {
			t.Errorf("line %d %q, want %q", i, lines[i], want)
		}
	}
	b.Reset()
	feed(&printer{out: &b, quiet: true})
	if b.Len() != 0 {
		t.Errorf("-quiet printed %q", b.String())
	}
}

// TestTrainEvaluateOnly: -steps 0 plays the validation games with the
// starting policy and trains nothing. Evaluating a run's checkpoint
// reproduces the run's own validation at that step (same games, same
// sampling streams), metrics.jsonl holds the one step-0 line, and no
// checkpoint is written; without validation games it is refused.
func TestTrainEvaluateOnly(t *testing.T) {
	t.Setenv("RAGEN_CACHE", t.TempDir())
	tiny := []string{"-env", "bandit", "-model", "tiny", "-groups", "2", "-group-size", "2",
		"-val", "6", "-val-every", "1", "-sft-episodes", "8", "-quiet"}
	first := filepath.Join(t.TempDir(), "first")
	if err := runTrain(slices.Concat(tiny, []string{"-steps", "1", "-sft-steps", "4", "-run", first})); err != nil {
		t.Fatal(err)
	}
	eval := filepath.Join(t.TempDir(), "eval")
	ckpt := filepath.Join(first, "checkpoints", "step-000001", "policy")
	if err := runTrain(slices.Concat(tiny, []string{"-steps", "0", "-init", ckpt, "-run", eval})); err != nil {
		t.Fatal(err)
	}
	read := func(dir string) []metrics.Step {
		b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var steps []metrics.Step
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var s metrics.Step
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatal(err)
			}
			steps = append(steps, s)
		}
		return steps
	}
	trained, evaluated := read(first), read(eval)
	if len(trained) != 2 || trained[0].Step != 0 || trained[1].Step != 1 {
		t.Fatalf("training run: metrics.jsonl steps %v, want the warm start's validation (0) and step 1", trained)
	}
	if len(evaluated) != 1 || evaluated[0].Step != 0 {
		t.Fatalf("evaluation: metrics.jsonl has %d lines, want one for step 0", len(evaluated))
	}
	for _, name := range []string{metrics.ValSuccessRate, metrics.ValRewardMean} {
		want, got := trained[1].Values[name], evaluated[0].Values[name]
		if _, ok := evaluated[0].Values[name]; !ok || got != want {
			t.Errorf("%s: evaluating the step-1 checkpoint gives %v, the run validated %v", name, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(eval, "checkpoints")); !os.IsNotExist(err) {
		t.Errorf("an evaluation wrote checkpoints (stat: %v)", err)
	}
	err := runTrain(slices.Concat(tiny, []string{"-steps", "0", "-val", "0"}))
	if err == nil || !strings.Contains(err.Error(), "needs val_episodes > 0") {
		t.Errorf("-steps 0 -val 0: error %v, want one asking for validation games", err)
	}
}

// TestInterruptedMessage: Ctrl-C names the checkpoint to resume from only
// when one exists.
func TestInterruptedMessage(t *testing.T) {
	run := t.TempDir()
	if got, want := interrupted(3, ""), "interrupted after step 3; nothing was saved (no -run directory): run again to start over"; got != want {
		t.Errorf("no run directory:\n got %s\nwant %s", got, want)
	}
	none := "interrupted after step 0; no checkpoint was saved (a checkpoint needs a finished step): run again to start over"
	if got := interrupted(0, run); got != none {
		t.Errorf("no checkpoint:\n got %s\nwant %s", got, none)
	}
	ckpts := filepath.Join(run, "checkpoints")
	for _, d := range []string{"step-000001", "step-000002", "step-000003.tmp"} {
		if err := os.MkdirAll(filepath.Join(ckpts, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := "interrupted after step 3; resume with -resume " + filepath.Join(ckpts, "step-000002") + " (saved at step 2: the steps after it will be trained again)"
	if got := interrupted(3, run); got != want {
		t.Errorf("checkpoint at step 2:\n got %s\nwant %s", got, want)
	}
	if got, want := interrupted(2, run), "interrupted after step 2; resume with -resume "+filepath.Join(ckpts, "step-000002"); got != want {
		t.Errorf("checkpoint at the last step:\n got %s\nwant %s", got, want)
	}
}

// TestTrainCtrlC: Ctrl-C to a running `ragen train` (a child process)
// saves a checkpoint of the last step done, which the message names and
// -resume continues from.
func TestTrainCtrlC(t *testing.T) {
	if args := os.Getenv("RAGEN_TEST_MAIN"); args != "" {
		os.Args = append([]string{"ragen"}, strings.Fields(args)...)
		main()
		return
	}
	t.Setenv("RAGEN_CACHE", t.TempDir())
	run := filepath.Join(t.TempDir(), "run")
	args := []string{"-env", "bandit", "-model", "tiny", "-groups", "2", "-group-size", "2",
		"-val", "0", "-sft-steps", "2", "-sft-episodes", "8", "-run", run}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTrainCtrlC$")
	cmd.Env = append(os.Environ(), "RAGEN_TEST_MAIN=train -steps 1000 "+strings.Join(args, " "))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "step   2/1000") {
			cmd.Process.Signal(os.Interrupt)
			break
		}
	}
	rest, _ := io.ReadAll(stderr)
	out.Write(rest)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("an interrupted ragen train exited 0:\n%s", out.String())
	}
	m := regexp.MustCompile(`interrupted after step (\d+); resume with -resume (\S+)\n`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no checkpoint named after Ctrl-C:\n%s", out.String())
	}
	if want := filepath.Join(run, "checkpoints", fmt.Sprintf("step-%06s", m[1])); m[2] != want {
		t.Errorf("resume from %s, want %s (the last step done)", m[2], want)
	}
	n, _ := strconv.Atoi(m[1])
	resumed := filepath.Join(t.TempDir(), "resumed")
	if err := runTrain(append(args, "-steps", strconv.Itoa(n+1), "-resume", m[2], "-run", resumed, "-quiet")); err != nil {
		t.Fatalf("-resume %s: %v", m[2], err)
	}
}

// TestTrainFilterAndMaskFlags: RAGEN v2's filter flags and -loss-mask reach
// the run's config; without them config.json has none of their keys.
func TestTrainFilterAndMaskFlags(t *testing.T) {
	t.Setenv("RAGEN_CACHE", t.TempDir())
	args := []string{"-env", "bandit", "-model", "tiny", "-steps", "1", "-groups", "2", "-group-size", "2",
		"-val", "0", "-sft-steps", "2", "-sft-episodes", "8", "-quiet"}
	read := func(dir string) map[string]any {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	dir := filepath.Join(t.TempDir(), "v2")
	if err := runTrain(slices.Concat(args, []string{"-run", dir, "-filter-metric", "reward", "-filter-strategy", "top_p",
		"-filter-value", "0.9", "-filter-top-p-mode", "softmax", "-filter-eps", "0.02", "-filter-smallest",
		"-filter-exclude-zero", "-filter-empty-stop", "3", "-loss-mask", "answer"})); err != nil {
		t.Fatal(err)
	}
	cfg := read(dir)
	algo := cfg["algo"].(map[string]any)
	want := map[string]any{"filter_metric": "reward", "filter_strategy": "top_p", "filter_value": 0.9, "filter_top_p_mode": "softmax",
		"filter_selection_eps": 0.02, "filter_smallest": true, "filter_exclude_zero": true}
	for k, v := range want {
		if algo[k] != v {
			t.Errorf("algo.%s = %v, want %v", k, algo[k], v)
		}
	}
	if cfg["filter_empty_stop"] != 3.0 || cfg["loss_mask"] != "answer" {
		t.Errorf("filter_empty_stop %v, loss_mask %v", cfg["filter_empty_stop"], cfg["loss_mask"])
	}

	dir = filepath.Join(t.TempDir(), "default")
	if err := runTrain(slices.Concat(args, []string{"-run", dir})); err != nil {
		t.Fatal(err)
	}
	cfg = read(dir)
	algo = cfg["algo"].(map[string]any)
	for _, k := range []string{"filter_strategy", "filter_value", "filter_top_p_mode", "filter_selection_eps", "filter_smallest", "filter_exclude_zero"} {
		if v, ok := algo[k]; ok {
			t.Errorf("default run: algo.%s = %v, want no such key", k, v)
		}
	}
	for _, k := range []string{"filter_empty_stop", "loss_mask"} {
		if v, ok := cfg[k]; ok {
			t.Errorf("default run: %s = %v, want no such key", k, v)
		}
	}

	err := runTrain(slices.Concat(args, []string{"-loss-mask", "reasoning"}))
	if err == nil || !strings.Contains(err.Error(), `loss_mask: must be one of all, answer, think (got "reasoning")`) {
		t.Errorf("-loss-mask reasoning: error %v", err)
	}
}

// trainFlagExempt are the train.Config fields without a flag of their own,
// and why.
var trainFlagExempt = map[string]string{
	"EnvOptions":   "-opt key=value",
	"NewEnv":       "a notebook's custom environment",
	"EnvLabel":     "a notebook's custom environment",
	"Reward":       "a notebook's reward expression",
	"GroupScore":   "a notebook's filter expression",
	"LossMaskFunc": "a notebook's loss-mask expression",
	"Comm":         "the processes of a data-parallel run: MPI's world in the mpi build, NCCL's with -backend cuda in the cuda build",
}

// TestTrainFlagsCoverConfig: every field of train.Config has a flag, listed
// by -h, and each flag sets its field: parsed with a value other than the
// default, the field holds that value and no other field changed.
func TestTrainFlagsCoverConfig(t *testing.T) {
	var help strings.Builder
	if _, _, err := parseTrain([]string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: error %v, want flag.ErrHelp", err)
	}
	def, _, err := parseTrain(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range knob.Fields(reflect.TypeOf(train.Config{})) {
		if f.Flag == "" {
			if _, ok := trainFlagExempt[f.Path]; !ok {
				t.Errorf("train.Config.%s has no flag (tag it flag:\"name\" help:\"...\")", f.Path)
			}
			continue
		}
		if f.Help == "" {
			t.Errorf("-%s (%s) has no help", f.Flag, f.Path)
		}
		if !strings.Contains(help.String(), "\n  -"+f.Flag+" ") && !strings.Contains(help.String(), "\n  -"+f.Flag+"\n") {
			t.Errorf("-h does not list -%s", f.Flag)
		}
		arg, want := sampleFlag(t, f, def)
		args := []string{"-" + f.Flag + "=" + arg}
		if strings.HasPrefix(f.Path, "LoRA.") && f.Path != "LoRA.Rank" {
			args = append(args, "-lora-rank=2") // without a rank LoRA is off
		}
		c, _, err := parseTrain(args, io.Discard)
		if err != nil {
			t.Errorf("-%s=%s: %v", f.Flag, arg, err)
			continue
		}
		if got := f.Value(&c, false); !got.IsValid() || !reflect.DeepEqual(got.Interface(), want) {
			t.Errorf("-%s=%s: %s = %v, want %v", f.Flag, arg, f.Path, got, want)
		}
		if f.Path == "WarmStart.Steps" || strings.HasPrefix(f.Path, "LoRA.") || f.Path == "Init" || f.Path == "Pretrained" {
			continue // these change others by design
		}
		f.Value(&c, true).Set(f.Value(&def, true))
		if a, b := mustJSON(t, c), mustJSON(t, def); a != b || c.RunDir != def.RunDir || c.WarmStart.CacheDir != def.WarmStart.CacheDir {
			t.Errorf("-%s=%s changed other fields:\n%s\nwant\n%s", f.Flag, arg, a, b)
		}
	}
}

// sampleFlag is a value for f's flag other than its default in def, and
// the field's value it gives.
func sampleFlag(t *testing.T, f knob.Field, def train.Config) (string, any) {
	d := f.Value(&def, true) // def is a copy: a nil LoRA may be allocated
	switch f.Type.Kind() {
	case reflect.String:
		return "x-" + d.String(), "x-" + d.String()
	case reflect.Bool:
		return strconv.FormatBool(!d.Bool()), !d.Bool()
	case reflect.Int:
		return strconv.Itoa(int(d.Int()) + 3), int(d.Int()) + 3
	case reflect.Int64:
		return strconv.Itoa(int(d.Int()) + 3), d.Int() + 3
	case reflect.Float32:
		return strconv.FormatFloat(d.Float()+0.25, 'g', -1, 32), float32(d.Float() + 0.25)
	case reflect.Float64:
		return strconv.FormatFloat(d.Float()+0.25, 'g', -1, 64), d.Float() + 0.25
	case reflect.Slice:
		return "q_proj,v_proj", []string{"q_proj", "v_proj"}
	case reflect.Pointer:
		x := 0.5
		return "0.5", &x
	}
	t.Fatalf("%s: no sample for %s", f.Path, f.Type)
	return "", nil
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTrainFlagDefaults: with no flags the config is the one ragen train
// always wrote (train.Default with precision "f32"), so the hashes of
// cached runs and warm starts do not change.
func TestTrainFlagDefaults(t *testing.T) {
	c, a, err := parseTrain(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := train.Default()
	want.Precision = "f32"
	if got, w := mustJSON(t, c), mustJSON(t, want); got != w {
		t.Errorf("default config\n got %s\nwant %s", got, w)
	}
	if a.preset != "starpo-s" || a.resume != "" || a.quiet {
		t.Errorf("default arguments %+v", a)
	}
}

// TestTrainPresetAndOverrides: -preset sets the algorithm's base and the
// algorithm flags given win over it, in any order; -lora-rank fills alpha
// and targets as before, and rank 0 is full fine-tuning.
func TestTrainPresetAndOverrides(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		check func(c train.Config) bool
	}{
		{[]string{"-preset", "starpo"}, func(c train.Config) bool { return reflect.DeepEqual(c.Algo, algo.StarPO()) }},
		{[]string{"-filter", "0.5", "-preset", "starpo"}, func(c train.Config) bool { return c.Algo.FilterRatio == 0.5 && c.Algo.KLCoef == 0.001 }},
		{[]string{"-preset", "starpo", "-estimator", "grpo", "-kl-coef", "0"}, func(c train.Config) bool {
			return c.Algo.AdvEstimator == "grpo" && c.Algo.KLCoef == 0 && c.Algo.ClipHigh == 0.2
		}},
		{[]string{"-filter-above", "0.1"}, func(c train.Config) bool { return c.Algo.FilterAbove != nil && *c.Algo.FilterAbove == 0.1 }},
		{[]string{"-lora-rank", "8"}, func(c train.Config) bool {
			return c.LoRA != nil && c.LoRA.Rank == 8 && c.LoRA.Alpha == 16 && slices.Equal(c.LoRA.Targets, []string{"all-linear"})
		}},
		{[]string{"-lora-rank", "4", "-lora-alpha", "4", "-lora-targets", "q_proj,v_proj"}, func(c train.Config) bool {
			return c.LoRA.Rank == 4 && c.LoRA.Alpha == 4 && slices.Equal(c.LoRA.Targets, []string{"q_proj", "v_proj"})
		}},
		{[]string{"-lora-alpha", "4"}, func(c train.Config) bool { return c.LoRA == nil }},
		{[]string{"-groups", "16", "-max-tokens", "64", "-top-k", "5", "-top-p", "0.9", "-grad-clip", "0.5", "-monitor-action", "stop", "-sft-context", "-think=false"},
			func(c train.Config) bool {
				return c.EnvGroups == 16 && c.MaxTokensPerTurn == 64 && c.TopK == 5 && c.TopP == float32(0.9) && c.GradClip == 0.5 &&
					c.Monitor.Action == "stop" && c.WarmStart.LearnContext && !c.Think
			}},
		{[]string{"-init", "ckpt"}, func(c train.Config) bool { return c.Init == "ckpt" && c.WarmStart.Steps == 0 }},
		{[]string{"-sft-steps", "30", "-pretrained", "hf"}, func(c train.Config) bool { return c.Pretrained == "hf" && c.WarmStart.Steps == 30 }},
	} {
		c, _, err := parseTrain(tc.args, io.Discard)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if !tc.check(c) {
			t.Errorf("%v: config %s", tc.args, mustJSON(t, c))
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-preset", "ppo"}, `-preset: must be starpo-s or starpo (got "ppo")`},
		{[]string{"-groups", "many"}, `invalid value "many" for flag -groups: invalid syntax`},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		if _, _, err := parseTrain(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestREADMECommands: every ragen train command of the README parses.
func TestREADMECommands(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	n := 0
	for _, line := range strings.Split(text, "\n") {
		_, args, ok := strings.Cut(line, "cmd/ragen train ")
		if !ok {
			continue
		}
		args, _, _ = strings.Cut(args, "#")
		args = strings.ReplaceAll(args, "$WARM", "warm")
		n++
		if _, _, err := parseTrain(strings.Fields(args), io.Discard); err != nil {
			t.Errorf("README: ragen train %s: %v", args, err)
		}
	}
	if n < 4 {
		t.Errorf("found %d ragen train commands in the README, want at least 4", n)
	}
}

// TestTrainHelp: ragen train -h describes the command, lists the flags by
// section and exits 0. It runs main in a child process (this test binary,
// told by RAGEN_TEST_MAIN which arguments to give it).
func TestTrainHelp(t *testing.T) {
	if args := os.Getenv("RAGEN_TEST_MAIN"); args != "" {
		os.Args = append([]string{"ragen"}, strings.Fields(args)...)
		main()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTrainHelp$")
	cmd.Env = append(os.Environ(), "RAGEN_TEST_MAIN=train -h")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ragen train -h: %v\n%s", err, out)
	}
	for _, want := range []string{"usage: ragen train [flags]", "\nrollouts:\n", "\n  -groups int\n", "\n  -preset string\n", "\n  -monitor-action string\n", "(default 8)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("ragen train -h lacks %q:\n%s", want, out)
		}
	}
}
