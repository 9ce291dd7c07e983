package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ragen-go/ragen/dsl"
	"github.com/ragen-go/ragen/engine/train"
)

func init() {
	// Not in the usage text: a Slurm task of a sweep runs it (decision 42).
	register("run-spec", "", runSpec)
}

// runSpec runs `ragen run-spec FILE`: trains the run spec a sweep wrote to
// the run cache for a task of its Slurm job array, into the cache as the
// same run trained in the kernel would be, a line per step on standard
// error (the task's log). SIGTERM (scancel, the time limit) and Ctrl-C stop
// it at the next safe point, uncached.
func runSpec(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: ragen run-spec FILE (a Slurm task of a sweep runs it)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dsl.SetObserver(func() train.Observer { return &stepPrinter{} })
	r, err := dsl.TrainSpecFile(ctx, args[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ragen run-spec: %s: %d steps in %s\n", r.Name, r.Steps(), r.Dir)
	return nil
}
