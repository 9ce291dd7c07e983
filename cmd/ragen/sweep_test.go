package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// ragen sweep makes a run per value and seed, each the ragen train config
// with the flag and the seed given, named by them; its README command
// parses.
func TestSweepRuns(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, line, ok := strings.Cut(string(b), "\nragen sweep ")
	if !ok {
		t.Fatal("no ragen sweep command in the README")
	}
	line, _, _ = strings.Cut(line, "\n")
	a, err := parseSweep(strings.Fields(line), io.Discard)
	if err != nil {
		t.Fatalf("README: ragen sweep %s: %v", line, err)
	}
	if a.executor == nil || a.executor.String() != "slurm:partition=debug,cpus=2" {
		t.Errorf("executor %v", a.executor)
	}
	c, rows, err := sweepSpecs(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Variants) != 2 || len(rows) != 2 || len(rows[1]) != 2 {
		t.Fatalf("%d variants, %d rows", len(c.Variants), len(rows))
	}
	s := rows[1][1]
	if s.Name != "lr=3e-4 seed 2" || s.Config.ActorLR != 3e-4 || s.Config.Seed != 2 || s.Config.Steps != 20 || s.Config.Env != "bandit" {
		t.Errorf("run %s: lr %g seed %d steps %d env %s", s.Name, s.Config.ActorLR, s.Config.Seed, s.Config.Steps, s.Config.Env)
	}
	keys := map[string]bool{}
	for _, row := range rows {
		for _, s := range row {
			keys[s.Key] = true
		}
	}
	if len(keys) != 4 {
		t.Errorf("%d distinct keys for 4 runs", len(keys))
	}

	for args, want := range map[string]string{
		"-seeds 2 -- -steps 2":                `-vary: want flag=v1,v2,... (got "")`,
		"-vary seed=1,2":                      "-vary seed: use -seeds N",
		"-vary lr=1 -seeds 0":                 "-seeds must be ≥ 1 (got 0)",
		"-vary lr=1 -executor pbs":            `-executor: executor "pbs": want local or slurm[`,
		"-vary lr=x -- -steps 2":              `-vary lr=x: invalid value "x" for flag -lr`,
		"-vary lr=1e-4 -- -steps 2 -nosuch 1": "train flags: flag provided but not defined: -nosuch",
	} {
		a, err := parseSweep(strings.Fields(args), io.Discard)
		if err == nil {
			_, _, err = sweepSpecs(a)
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ragen sweep %s: %v, want %s...", args, err, want)
		}
	}
}
