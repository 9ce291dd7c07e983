package dsl

import (
	"fmt"
	"slices"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/ragen-go/ragen/engine/train"
)

// MaskToken is the record a loss-mask expression (Experiment.LossMask)
// reads: one token the agent sampled.
//
//	turn    its turn, from 1
//	turns   turns in the trajectory
//	span    "think" (inside <think>…</think>), "answer" (inside
//	        <answer>…</answer>) or "format" (the tags, text around them)
//	pos     its position in the turn's response, from 0
//	tokens  tokens in the turn's response
//
// For example `span == "answer" || turn == turns` trains the answers and
// the whole last turn, `span != "format"` everything but the tags.
type MaskToken struct {
	Turn   int    `expr:"turn"`
	Turns  int    `expr:"turns"`
	Span   string `expr:"span"`
	Pos    int    `expr:"pos"`
	Tokens int    `expr:"tokens"`
}

// lossMask sets c's loss-mask rule from an Experiment's LossMask: a
// named rule (all, answer, think) as it is, else a boolean expression over
// MaskToken. The expression's text stays in c.LossMask, naming the rule in
// config.json and in the run cache's key.
func lossMask(c *train.Config, src string) error {
	c.LossMask = src
	if src == "" || slices.Contains(train.LossMasks, src) {
		return nil
	}
	prog, err := compileAs("loss mask", src, MaskToken{}, expr.AsBool())
	if err != nil {
		return err
	}
	c.LossMaskFunc = func(t train.MaskToken) (bool, error) { return runBool(prog, t) }
	return nil
}

func runBool(prog *vm.Program, t train.MaskToken) (bool, error) {
	rec := &MaskToken{Turn: t.Turn, Turns: t.Turns, Span: t.Span.String(), Pos: t.Pos, Tokens: t.Len}
	out, err := expr.Run(prog, rec)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("result is %T %v, not a bool", out, out)
	}
	return b, nil
}
