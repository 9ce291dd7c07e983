package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/ragen-go/ragen/dsl"
	"github.com/ragen-go/ragen/engine/train"
)

func init() {
	register("sweep", "train a config for several values of one flag and seeds, here or as a Slurm job array", runSweep)
}

const sweepUsage = `usage: ragen sweep [sweep flags] -- [ragen train flags]

Trains the ragen train config once for each value of one of its flags and
each seed, and prints the comparison table (final reward, success, entropy:
mean ± std over the seeds). Runs are cached under the hash of their config in
$RAGEN_CACHE/runs, so running the sweep again, or a larger one, trains only
what is missing. With -executor slurm:... every run is a task of one Slurm job
array, trained by this binary on the shared run cache (RAGEN_CACHE must be on
a filesystem the nodes share); the numbers are those of a local run.

  ragen sweep -vary lr=1e-4,3e-4 -seeds 2 -executor slurm:partition=debug,cpus=2 \
      -- -env bandit -steps 20

flags:
`

// sweepArgs are ragen sweep's own flags.
type sweepArgs struct {
	flag     string   // the train flag varied
	values   []string // its values
	seeds    int
	executor dsl.Executor
	train    []string // the train flags
}

func parseSweep(args []string, out io.Writer) (sweepArgs, error) {
	fs := flag.NewFlagSet("ragen sweep", flag.ContinueOnError)
	fs.SetOutput(out)
	vary := fs.String("vary", "", "the ragen train flag to vary and its values: `flag=v1,v2,...` (e.g. lr=1e-4,3e-4 or filter=0.25,1)")
	seeds := fs.Int("seeds", 1, "seeds per value: the -seed flag's value and the next ones (-seed 1: 1, 2, ...)")
	executor := fs.String("executor", os.Getenv("RAGEN_EXECUTOR"), "where the runs train: `local` or slurm[:partition=P,cpus=N,gpus=N,time=T,mem=M,account=A,parallel=N] (default $RAGEN_EXECUTOR, else local)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), sweepUsage)
		fs.PrintDefaults()
	}
	var a sweepArgs
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	a.train = fs.Args()
	name, values, ok := strings.Cut(*vary, "=")
	name = strings.TrimPrefix(name, "-")
	if !ok || name == "" || values == "" {
		return a, fmt.Errorf("-vary: want flag=v1,v2,... (got %q)", *vary)
	}
	if name == "seed" {
		return a, errors.New("-vary seed: use -seeds N")
	}
	a.flag, a.values, a.seeds = name, strings.Split(values, ","), *seeds
	if a.seeds < 1 {
		return a, fmt.Errorf("-seeds must be ≥ 1 (got %d)", a.seeds)
	}
	var err error
	if a.executor, err = dsl.ParseExecutor(*executor); err != nil {
		return a, fmt.Errorf("-executor: %w", err)
	}
	return a, nil
}

// sweepSpecs builds the runs: for each value, for each seed, the train
// flags with -flag value -seed s appended.
func sweepSpecs(a sweepArgs) (*dsl.Comparison, [][]*dsl.RunSpec, error) {
	base, _, err := parseTrain(a.train, io.Discard)
	if err != nil {
		return nil, nil, fmt.Errorf("train flags: %w (see ragen train -h)", err)
	}
	c := &dsl.Comparison{Title: fmt.Sprintf("%s: sweep of -%s, %d seeds", base.Env, a.flag, a.seeds)}
	var specs [][]*dsl.RunSpec
	for _, v := range a.values {
		label := fmt.Sprintf("%s=%s", a.flag, v)
		var row []*dsl.RunSpec
		for i := 0; i < a.seeds; i++ {
			seed := base.Seed + int64(i)
			cfg, _, err := parseTrain(append(append([]string{}, a.train...), "-"+a.flag, v, "-seed", strconv.FormatInt(seed, 10)), io.Discard)
			if err != nil {
				return nil, nil, fmt.Errorf("-vary %s: %w", label, err)
			}
			s, err := dsl.NewRunSpec(fmt.Sprintf("%s seed %d", label, seed), cfg)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", label, err)
			}
			row = append(row, s)
		}
		c.Variants = append(c.Variants, dsl.Variant{Label: label})
		specs = append(specs, row)
	}
	return c, specs, nil
}

func runSweep(args []string) error {
	a, err := parseSweep(args, os.Stderr)
	if err != nil {
		return err
	}
	c, rows, err := sweepSpecs(a)
	if err != nil {
		return err
	}
	var all []*dsl.RunSpec
	for _, row := range rows {
		all = append(all, row...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	where := "here"
	if a.executor != nil {
		where = a.executor.String()
	}
	fmt.Fprintf(os.Stderr, "ragen sweep: %d runs (%d values × %d seeds), %s\n", len(all), len(a.values), a.seeds, where)
	dsl.SetObserver(func() train.Observer { return &stepPrinter{} }) // runs trained here
	runs, err := dsl.RunAll(ctx, a.executor, all)
	i := 0
	for v := range c.Variants {
		for range rows[v] {
			if runs[i] != nil {
				c.Variants[v].Runs = append(c.Variants[v].Runs, runs[i])
			}
			i++
		}
	}
	fmt.Println(c.String())
	return err
}
