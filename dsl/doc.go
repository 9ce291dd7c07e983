// Package dsl is the experiment API of notebook cells, imported in a cell as
// "ragen":
//
//	exp := ragen.Experiment{
//		Env:    ragen.Sokoban(ragen.Dim(6, 6), ragen.Boxes(1), ragen.MaxTurns(5)),
//		Reward: ragen.Reward(`success ? 10 : sum(turns, .reward) - 0.1 * invalid_actions`),
//		Filter: ragen.Filter(`in_group_std`, ragen.TopP(0.25)),
//		Algo:   ragen.StarPOS(),
//		Steps:  100, Seed: 1,
//	}
//	run := exp.Train()
//	run.Dashboard()
//
// With GradientReportEvery set, run.GradientReport() charts RAGEN's
// gradient analysis: the task, entropy and KL gradient norms on buckets
// of groups by reward std.
//
// The policy is a size preset trained here from a warm start (Model:
// "tiny"), or a model to start from: a Hugging Face checkpoint, whose chat
// template then lays out the prompts, or a checkpoint of ours:
//
//	exp.Model = ragen.Pretrained("models/Qwen2.5-0.5B-Instruct")
//	exp.Model = ragen.Checkpoint(run.Checkpoints()[0])
//
// RAGEN v2's SNR-aware filter and VAGEN-style loss masks are options too:
//
//	exp.Filter = ragen.Filter("reward_variance", ragen.TopPLinear(0.9), ragen.ExcludeZero())
//	exp.LossMask = `span == "answer" || turn == turns`
//
// An environment defined in a cell implements Env (envs.Env and its expert,
// envs.Expert, whose demonstrations the warm start learns from) and is
// trained exactly like a built-in one:
//
//	exp.Env = ragen.Custom("coin", func() ragen.Env { return &Coin{} }, ragen.MaxTurns(1))
//
// An Experiment is a plain struct: every field has a documented default that
// its zero value selects, so a cell names only what it changes. It compiles
// to one train.Config (Experiment.Config); Validate names the Experiment's
// own field of a bad value ("GroupSize: must be > 0 (got -1)").
//
// The API is shaped for yaegi, which interprets cells: no generics, plain
// structs, option values of concrete types, methods on concrete types.
//
// # Errors in cells
//
// Functions a cell calls inline — Reward, Filter, the environment
// constructors, Train, Sweep, Seeds — return one value and panic with an
// error on bad input, like regexp.MustCompile, so the cell that declared the
// bad value stops at that line. Each has a form that returns the error
// instead (CompileReward, CompileFilter, NewEnv, TrainContext, SweepContext,
// SeedsContext).
//
// Reward and filter expressions use github.com/expr-lang/expr, compiled once
// where declared. An error shows the expression's line and column, the line
// and a caret, as expr-lang formats it.
//
// # Runs and the cache
//
// A run is cached under a hash of its full configuration (the reward and
// filter sources included; a custom environment by its label) in
// $RAGEN_CACHE/runs or the user cache directory: running a cell again with an
// unchanged experiment loads the result at once. Experiment.Fresh re-runs.
//
// # Samples
//
// A run keeps a few episodes to read (metrics.Sample): the first
// validation episodes of every validation, on the same seeds each time, and
// one training trajectory at step 1, every ValEvery-th step and the last,
// with what each of the agent's tokens was paid and credited.
// Run.Samples(split, step) returns those of "val" or "train" at a step (-1:
// the last). ShowSamples shows samples side by side, a column per split and
// step, so the answers before and after training face each other;
// ShowCredit shows one training sample's tokens coloured by advantage, with
// reward, value, advantage and return on hover; plots.NewCreditChart(s)
// plots the same numbers:
//
//	ragen.ShowSamples(append(run.Samples("val", 0), run.Samples("val", -1)...)...)
//	ragen.ShowCredit(run.Samples("train", -1)[0])
//
// # Hooks for the kernel
//
// The kernel session sets three package-level hooks: SetContext (the context
// Train uses, cancelled when the user interrupts the cell), SetObserver (live
// progress) and SetDisplay (publishing display data). Outside the kernel
// Train uses context.Background, reports nothing, and Display prints the
// text/plain form to standard output.
package dsl
