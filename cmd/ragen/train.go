package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/train"
	"github.com/ragen-go/ragen/envs"
	_ "github.com/ragen-go/ragen/envs/all"
	"github.com/ragen-go/ragen/internal/knob"
)

func init() {
	register("train", "train an agent with StarPO / StarPO-S from the terminal", runTrain)
}

// optionFlags collects repeated -opt key=value flags.
type optionFlags []string

func (o *optionFlags) String() string     { return strings.Join(*o, ",") }
func (o *optionFlags) Set(v string) error { *o = append(*o, v); return nil }

const trainUsage = `usage: ragen train [flags]

Trains a policy with StarPO or StarPO-S on one environment: a warm start
(fine-tuning on expert demonstrations, cached by its config) or a model to
start from (-init, -pretrained), then steps of rollouts in groups, advantages,
the group filter and PPO updates, validating on held-out seeds. It prints a
line per step and a summary; -run DIR keeps config.json, metrics.jsonl,
events.jsonl and checkpoints, -resume continues a run with the numbers it
would have had, and -steps 0 only evaluates the starting policy.

Each flag but -preset, -opt, -resume, -quiet and -cpuprofile sets a field of train.Config
(engine/train/config.go, where the fields are documented); the defaults shown
are train.Default()'s.

  ragen train -env sokoban -opt observation_format=coord -sft-context \
      -groups 16 -estimator dr_grpo -filter 1 -lr 1e-4 -steps 30 -run runs/sokoban
`

// trainArgs is what ragen train's flags give besides the config.
type trainArgs struct {
	preset     string
	resume     string
	quiet      bool
	cpuprofile string
}

// parseTrain parses ragen train's arguments into a config. The config's
// flags are derived from train.Config's tags (internal/knob); -h prints the
// usage to out and returns flag.ErrHelp.
func parseTrain(args []string, out io.Writer) (train.Config, trainArgs, error) {
	fs := flag.NewFlagSet("ragen train", flag.ContinueOnError)
	fs.SetOutput(out)
	c := train.Default()
	// Precision "f32", not "", as ragen train always wrote it: the config
	// JSON, whose hash keys cached runs, keeps the same bytes.
	c.Precision = "f32"
	var a trainArgs
	var opts optionFlags
	fs.StringVar(&a.preset, "preset", "starpo-s", "algorithm preset, the base the algorithm flags change: starpo-s | starpo")
	fs.Var(&opts, "opt", "environment option key=value (repeatable), e.g. -opt dim=6 -opt boxes=1")
	fs.StringVar(&a.resume, "resume", "", "resume from this checkpoint directory (runs/x/checkpoints/step-000020)")
	fs.BoolVar(&a.quiet, "quiet", false, "print only the final summary")
	fs.StringVar(&a.cpuprofile, "cpuprofile", "", "write a CPU profile of the run (model loading included) to this file (go tool pprof)")
	bound := knob.Bind(fs, &c)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), trainUsage)
		fmt.Fprintf(fs.Output(), "\nenvironments: %s (ragen play -list shows their options)\nbackends: %s\n",
			strings.Join(envs.Names(), ", "), strings.Join(backend.Names(), ", "))
		knob.PrintSections(fs.Output(), fs, trainSections(bound))
	}
	if err := fs.Parse(args); err != nil {
		return c, a, err
	}
	if fs.NArg() > 0 {
		return c, a, fmt.Errorf("unexpected argument %q (flags only; see ragen train -h)", fs.Arg(0))
	}
	if c.Init != "" && c.Pretrained != "" {
		return c, a, fmt.Errorf("-init and -pretrained both name a starting model; give one")
	}
	if c.Init != "" || c.Pretrained != "" {
		sftSet := false
		fs.Visit(func(f *flag.Flag) { sftSet = sftSet || f.Name == "sft-steps" })
		if !sftSet { // a loaded model needs no warm start unless asked for one
			c.WarmStart.Steps = 0
		}
	}
	if c.LoRA != nil { // a -lora-* flag was given
		if c.LoRA.Rank == 0 {
			c.LoRA = nil // rank 0: full fine-tuning
		} else {
			l := c.LoRA.WithDefaults()
			c.LoRA = &l
		}
	}
	// The algorithm flags were bound over StarPO-S; over another preset the
	// flags given still win.
	given := c
	switch a.preset {
	case "starpo-s", "starpos":
		c.Algo = algo.StarPOS()
	case "starpo":
		c.Algo = algo.StarPO()
	default:
		return c, a, fmt.Errorf("-preset: must be starpo-s or starpo (got %q)", a.preset)
	}
	knob.Reapply(fs, bound, &given, &c)
	if len(opts) > 0 {
		spec, ok := envs.Lookup(c.Env)
		if !ok {
			return c, a, fmt.Errorf("-env: unknown environment %q (known: %s)", c.Env, strings.Join(envs.Names(), ", "))
		}
		c.EnvOptions = map[string]any{}
		for _, kv := range opts {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return c, a, fmt.Errorf("-opt %q: want key=value", kv)
			}
			var opt *envs.Option
			for i := range spec.Options {
				if spec.Options[i].Name == k {
					opt = &spec.Options[i]
				}
			}
			if opt == nil {
				_, err := spec.Resolve(map[string]any{k: v})
				return c, a, err
			}
			val, err := envs.ParseOptionValue(*opt, v)
			if err != nil {
				return c, a, err
			}
			c.EnvOptions[k] = val
		}
	}
	return c, a, nil
}

// trainSections groups the usage text: the config's sections from its
// group tags, with the hand-written flags next to the ones they go with.
func trainSections(bound []knob.Field) []knob.Section {
	secs := knob.Sections(bound)
	after := map[string][]string{"env": {"opt"}, "run": {"resume"}, "checkpoint-every": {"quiet", "cpuprofile"}}
	for i := range secs {
		var names []string
		if strings.HasPrefix(secs[i].Title, "algorithm") {
			names = append(names, "preset")
		}
		for _, n := range secs[i].Flags {
			names = append(names, n)
			names = append(names, after[n]...)
		}
		secs[i].Flags = names
	}
	return secs
}

func runTrain(args []string) error {
	c, a, err := parseTrain(args, os.Stderr)
	if err != nil {
		return err
	}
	comm, finalize, err := world(c.Backend)
	if err != nil {
		return err
	}
	c.Comm = comm
	stopProfile, err := startCPUProfile(a.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx, stop := interruptible()
	defer stop()
	var obs train.Observer = &printer{out: os.Stderr, quiet: a.quiet, start: time.Now(), steps: c.Steps, warmStart: warmStartLine(&c)}
	if comm != nil && comm.Rank() != 0 {
		// Every rank computes the same steps; rank 0 reports them.
		err := trainRank(ctx, c, a.resume)
		if ferr := finalize(); err == nil {
			err = ferr
		}
		return err
	}
	if comm != nil {
		fmt.Fprintf(os.Stderr, "ragen train: data parallel over %d processes\n", comm.Size())
	}
	modelName := c.Model
	switch {
	case c.Pretrained != "":
		modelName = c.Pretrained
	case c.Init != "":
		modelName = c.Init
	}
	if c.LoRA != nil {
		modelName += fmt.Sprintf(" with rank-%d LoRA", c.LoRA.Rank)
	}
	if c.Steps == 0 {
		fmt.Fprintf(os.Stderr, "ragen train: %s, model %s, no training: evaluating on %d validation games\n", c.Env, modelName, c.ValEpisodes)
	} else {
		fmt.Fprintf(os.Stderr, "ragen train: %s, %s preset, model %s, %d×%d rollouts per step, %d steps\n",
			c.Env, a.preset, modelName, c.EnvGroups, c.GroupSize, c.Steps)
	}
	tr, err := train.New(ctx, c, obs)
	if err != nil {
		return err
	}
	if dir, _ := train.WarmStartDir(&c); dir != "" && !a.quiet {
		fmt.Fprintf(os.Stderr, "warm start cached in %s (-init starts other runs from it)\n", dir)
	}
	if a.resume != "" {
		if err := tr.Resume(a.resume); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "resumed at step %d\n", tr.StepsDone())
	}
	err = tr.Run(ctx)
	if ferr := finalize(); err == nil {
		err = ferr
	}
	summary(tr.History, c.ValEpisodes)
	if c.RunDir != "" {
		fmt.Fprintf(os.Stderr, "run directory: %s\n", c.RunDir)
	}
	if errors.Is(err, context.Canceled) {
		msg := interrupted(tr.StepsDone(), c.RunDir)
		if e := err.Error(); e != context.Canceled.Error() {
			msg += ": " + e // the checkpoint's error
		}
		return errors.New(msg)
	}
	return err
}

// interruptible is a context cancelled by the first Ctrl-C, at which the
// trainer ends the step it is updating and saves a checkpoint; the signal
// is then let go, so a second Ctrl-C ends the process at once.
func interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	go func() {
		if _, ok := <-sig; ok {
			signal.Stop(sig)
			fmt.Fprintln(os.Stderr, "\ninterrupt: stopping at the end of the step (a started update is finished) to save a checkpoint; Ctrl-C again quits without saving")
			cancel()
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(sig)
		cancel()
	}
}

// trainRank is runTrain on a rank other than 0 of a data-parallel run:
// the same run, silent.
func trainRank(ctx context.Context, c train.Config, resume string) error {
	tr, err := train.New(ctx, c, nil)
	if err != nil {
		return err
	}
	if resume != "" {
		if err := tr.Resume(resume); err != nil {
			return err
		}
	}
	return tr.Run(ctx)
}

// interrupted says how a run stopped by Ctrl-C after step steps can go
// on: from the newest checkpoint in runDir/checkpoints (the trainer saves
// the last step done when it is interrupted), else that nothing was saved.
func interrupted(step int, runDir string) string {
	msg := fmt.Sprintf("interrupted after step %d", step)
	if runDir == "" {
		return msg + "; nothing was saved (no -run directory): run again to start over"
	}
	dirs, _ := filepath.Glob(filepath.Join(runDir, "checkpoints", "step-[0-9][0-9][0-9][0-9][0-9][0-9]"))
	last, lastStep := "", -1
	for _, d := range dirs {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "step-"))
		if st, serr := os.Stat(d); err == nil && serr == nil && st.IsDir() && n > lastStep {
			last, lastStep = d, n
		}
	}
	if last == "" {
		return msg + "; no checkpoint was saved (a checkpoint needs a finished step): run again to start over"
	}
	msg += fmt.Sprintf("; resume with -resume %s", last)
	if lastStep < step {
		msg += fmt.Sprintf(" (saved at step %d: the steps after it will be trained again)", lastStep)
	}
	return msg
}

// printer is the terminal observer: one line per step, and during the
// warm start's fine-tuning one every warmStartEvery.
type printer struct {
	out   io.Writer
	quiet bool
	start time.Time
	steps int
	// warmStart says what the warm_start phase does: train and cache a
	// warm start, fine-tune a loaded model (not cached), or only load one.
	warmStart string
	warm      warmStartLines
}

func (p *printer) Phase(step int, phase string) {
	if !p.quiet && phase == "warm_start" {
		fmt.Fprintln(p.out, p.warmStart)
	}
}

// WarmStart prints the fine-tuning's progress (see warmStartLines).
func (p *printer) WarmStart(w train.WarmStartProgress) {
	if !p.quiet {
		p.warm.print(p.out, w)
	}
}

// warmStartEvery is the longest the warm start goes without a line.
const warmStartEvery = 10 * time.Second

// warmStartLines prints the warm start's first step, its last, and in
// between one step every warmStartEvery of its elapsed time: a few lines a
// minute, not one per step. It times by the reports' own clock
// (WarmStartProgress.Elapsed).
type warmStartLines struct{ shown time.Duration }

func (l *warmStartLines) print(out io.Writer, w train.WarmStartProgress) {
	if w.Step == 1 || w.Step == w.Steps || w.Elapsed-l.shown >= warmStartEvery {
		l.shown = w.Elapsed
		fmt.Fprintln(out, w)
	}
}

// warmStartLine describes c's warm-start phase for the printer.
func warmStartLine(c *train.Config) string {
	switch {
	case c.Init == "" && c.Pretrained == "":
		return "warm start: expert demonstrations, vocabulary, fine-tuning (cached after the first run)..."
	case c.WarmStart.Steps > 0:
		return fmt.Sprintf("loading the model, then fine-tuning it on demonstrations for %d steps (not cached)...", c.WarmStart.Steps)
	}
	return "loading the model..."
}

func (p *printer) Step(s metrics.Step) {
	if p.quiet {
		return
	}
	v := s.Values
	line := fmt.Sprintf("step %3d/%d", s.Step, p.steps)
	add := func(label, name, format string) {
		if x, ok := v[name]; ok {
			line += fmt.Sprintf("  %s "+format, label, x)
		}
	}
	add("reward", metrics.RewardMean, "%6.3f")
	add("success", metrics.SuccessRate, "%4.2f")
	add("val", metrics.ValSuccessRate, "%4.2f")
	add("std", metrics.InGroupStd, "%5.3f")
	add("entropy", metrics.Entropy, "%5.3f")
	add("gnorm", metrics.GradNorm, "%6.3f")
	add("tokens", metrics.TurnTokens, "%5.1f")
	add("mi", metrics.CollapseMI, "%6.4f") // on the steps -collapse-every computes it
	add("s", metrics.TimeStep, "%5.1f")
	fmt.Fprintln(p.out, line)
}

func (p *printer) Event(e metrics.Event) {
	fmt.Fprintf(p.out, "  ! step %d %s: %s\n", e.Step, e.Kind, e.Message)
}

// summary prints the first and last value of the main metrics, and the
// last validation success with its standard error over the games,
// √(p(1−p)/n), to tell a difference between runs from the games' noise.
func summary(h metrics.History, valGames int) {
	if len(h.Steps) == 0 {
		return
	}
	first, last := h.Steps[0], h.Steps[len(h.Steps)-1]
	fmt.Printf("%-22s %10s %10s\n", "metric", "first", "last")
	for _, name := range []string{metrics.ValSuccessRate, metrics.SuccessRate, metrics.RewardMean, metrics.Entropy, metrics.TurnTokens} {
		f, okf := first.Values[name]
		l, okl := last.Values[name]
		if !okf && !okl {
			continue
		}
		fs, ls := "-", "-"
		if okf {
			fs = fmt.Sprintf("%.3f", f)
		}
		if okl {
			ls = fmt.Sprintf("%.3f", l)
		}
		fmt.Printf("%-22s %10s %10s\n", name, fs, ls)
	}
	if gb, ok := last.Values[metrics.PeakRSS]; ok {
		fmt.Printf("peak memory %.1f GB\n", gb)
	}
	if p, ok := last.Values[metrics.ValSuccessRate]; ok && valGames > 0 {
		fmt.Printf("validation success %.3f ± %.3f (standard error over %d games)\n", p, math.Sqrt(p*(1-p)/float64(valGames)), valGames)
	}
}
