package countdown

import (
	"fmt"
	"math/rand"
	"strings"
)

// Demonstrate implements envs.Expert. The expert solves the instance (the
// search order is shuffled by rng, so repeated calls show different
// solutions) and explains the solution step by step, sometimes after a
// first attempt that misses. Imperfect demonstrations combine the numbers
// in a random expression and report honestly what it gives.
func (e *Env) Demonstrate(rng *rand.Rand, imperfect bool) string {
	nums := joinInts(e.nums)
	var think, expr string
	if sol, ok := Solve(e.nums, e.target, "+-*/", rng); ok && !imperfect {
		expr = sol.Expr
		steps := strings.Join(sol.Steps, ", ")
		var b strings.Builder
		switch rng.Intn(3) {
		case 0:
			fmt.Fprintf(&b, "I need %d from %s.", e.target, nums)
		case 1:
			fmt.Fprintf(&b, "Target %d, numbers %s, each used once.", e.target, nums)
		default:
			fmt.Fprintf(&b, "Let me reach %d with %s.", e.target, nums)
		}
		if miss, ok := randomExpr(e.nums, rng); ok && miss.v != (rat{int64(e.target), 1}) && rng.Intn(3) == 0 {
			fmt.Fprintf(&b, " First try: %s. That gives %s, not %d.", strings.Join(miss.steps, ", "), miss.v, e.target)
		}
		fmt.Fprintf(&b, pick(rng, []string{
			" %[1]s. That is the target, so the expression is %[2]s.",
			" Step by step: %[1]s. It works: %[2]s.",
			" %s, which reaches %[3]d. Answer: %[2]s.",
		}), capitalize(steps), expr, e.target)
		think = b.String()
	} else {
		n, ok := randomExpr(e.nums, rng)
		for !ok { // each step succeeds with + at least, so this ends quickly
			n, ok = randomExpr(e.nums, rng)
		}
		expr = n.text
		think = fmt.Sprintf(pick(rng, []string{
			"Let me try combining %s: %s. That gives %s; it is the best I can find for %d.",
			"Numbers %s. Trying %s, so %s. Not sure it equals %d, but I will go with it.",
		}), nums, strings.Join(n.steps, ", "), n.v, e.target)
	}
	return "<think>" + think + "</think><answer>" + expr + "</answer>"
}

// randomExpr combines the numbers in a random order with random operators;
// ok is false when a step leaves the whole non-negative numbers (a division
// by zero included), so the reasoning reads as plain arithmetic.
func randomExpr(nums []int, rng *rand.Rand) (node, bool) {
	items := make([]node, len(nums))
	for i, n := range nums {
		items[i] = node{v: rat{int64(n), 1}, text: fmt.Sprint(n), prec: 3}
	}
	for len(items) > 1 {
		i := rng.Intn(len(items))
		j := rng.Intn(len(items) - 1)
		if j >= i {
			j++
		}
		c, ok := combine(items[i], "+-*/"[rng.Intn(4)], items[j])
		if !ok || c.v.n < 0 || c.v.d != 1 {
			return node{}, false
		}
		rest := items[:0:0]
		for k, it := range items {
			if k != i && k != j {
				rest = append(rest, it)
			}
		}
		items = append(rest, c)
	}
	return items[0], true
}

func pick(rng *rand.Rand, list []string) string { return list[rng.Intn(len(list))] }

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
