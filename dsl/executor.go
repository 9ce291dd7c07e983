package dsl

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// An Executor is where the runs of a sweep or of several seeds train
// (Experiment.Executor). nil trains them in this process, one after
// another; Slurm runs them as the tasks of one Slurm job array. Either way
// a run is cached under the same key with the same numbers, so a sweep run
// on a cluster is reused by the same sweep run here, and the other way
// round.
type Executor interface {
	// String is the executor as RAGEN_EXECUTOR spells it
	// ("slurm:partition=debug,cpus=2").
	String() string
	// execute brings every spec's run to the cache and returns the runs
	// in order; on an error, those that finished (the others nil).
	execute(ctx context.Context, specs []*RunSpec) ([]*Run, error)
}

var defaultExecutor Executor

// SetExecutor sets the executor of experiments whose Executor is nil:
// ragen-run sets the one RAGEN_EXECUTOR names. nil trains here.
func SetExecutor(ex Executor) {
	hookMu.Lock()
	defer hookMu.Unlock()
	defaultExecutor = ex
}

func executorOf(exp Experiment) Executor {
	if exp.Executor != nil {
		return exp.Executor
	}
	hookMu.RLock()
	defer hookMu.RUnlock()
	return defaultExecutor
}

// ParseExecutor reads an executor as RAGEN_EXECUTOR and `ragen sweep
// -executor` spell it: "" or "local" (nil: train here), "slurm", or
// "slurm:" and comma-separated settings of Slurm by their lower-case names,
// "slurm:partition=debug,cpus=2,gpus=0,time=1:00:00,mem=4G,account=lab,parallel=8".
func ParseExecutor(s string) (Executor, error) {
	kind, settings, _ := strings.Cut(s, ":")
	switch kind {
	case "", "local":
		if settings != "" {
			return nil, fmt.Errorf("executor %q: local takes no settings", s)
		}
		return nil, nil
	case "slurm":
	default:
		return nil, fmt.Errorf("executor %q: want local or slurm[:partition=P,cpus=N,gpus=N,time=T,mem=M,account=A,parallel=N]", s)
	}
	var sl Slurm
	if settings == "" {
		return sl, nil
	}
	for _, kv := range strings.Split(settings, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("executor %q: %q is not key=value", s, kv)
		}
		num := func(dst *int) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("executor %q: %s must be a number ≥ 0 (got %q)", s, k, v)
			}
			*dst = n
			return nil
		}
		var err error
		switch k {
		case "partition":
			sl.Partition = v
		case "time":
			sl.Time = v
		case "mem":
			sl.Mem = v
		case "account":
			sl.Account = v
		case "cpus":
			err = num(&sl.CPUs)
		case "gpus":
			err = num(&sl.GPUs)
		case "parallel":
			err = num(&sl.Parallel)
		default:
			err = fmt.Errorf("executor %q: unknown setting %q (partition, cpus, gpus, time, mem, account, parallel)", s, k)
		}
		if err != nil {
			return nil, err
		}
	}
	return sl, nil
}

// RunAll brings every spec's run to the cache with ex (nil: here, one
// after another), as Sweep does, and returns the runs in order: what
// `ragen sweep` calls. On an error it returns the runs that finished, the
// others nil.
func RunAll(ctx context.Context, ex Executor, specs []*RunSpec) ([]*Run, error) {
	if ex != nil {
		ctx, stop := withSession(ctx)
		defer stop()
		return ex.execute(ctx, specs)
	}
	runs := make([]*Run, len(specs))
	for i, s := range specs {
		r, err := s.train(ctx)
		if err != nil {
			return runs, fmt.Errorf("%s: %w", s.Name, err)
		}
		runs[i] = r
	}
	return runs, nil
}
