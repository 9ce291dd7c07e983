// A sweep over two filter ratios, one step each: two runs, a comparison
// table with one row per value; then two seeds of one setting.
package main

import (
	"fmt"
	"strings"

	"ragen"
)

func main() {
	exp := ragen.Experiment{
		Env:           ragen.Bandit(ragen.Arms("Teacher", "Gambler")),
		Model:         "tiny",
		Groups:        2,
		GroupSize:     2,
		TokensPerTurn: 160,
		Steps:         1,
		WarmStart:     ragen.WarmStart{Steps: 3, Episodes: 8, BatchSize: 4},
		NoValidation:  true,
		VocabSize:     300,
		Algo:          ragen.GRPO(),
	}
	cmp := ragen.Sweep(exp, "Filter.Ratio", 1.0, 0.5)
	for _, v := range cmp.Variants {
		r := v.Runs[0]
		fmt.Println(v.Label, "steps:", r.Steps(), "kept:", r.Metric("rollout/filter_kept_ratio").Values)
	}
	t := cmp.Table()
	fmt.Println(t.Columns[:2], len(t.Rows))
	again := ragen.Sweep(exp, "Filter.Ratio", 1.0, 0.5)
	fmt.Println("cached:", again.Runs()[0].Cached, again.Runs()[1].Cached)

	seeds := ragen.Seeds(exp, 2)
	for _, r := range seeds.Runs() {
		fmt.Println(r.Name, "steps:", r.Steps())
	}
	t = seeds.Table()
	fmt.Println(t.Rows[0][:2], strings.Contains(t.Rows[0][2], " ± "))
}

// Output:
// Filter.Ratio=1 steps: 1 kept: [1]
// Filter.Ratio=0.5 steps: 1 kept: [0.5]
// [variant runs] 2
// cached: true true
// bandit(hi_name=Gambler, lo_name=Teacher) seed 1 steps: 1
// bandit(hi_name=Gambler, lo_name=Teacher) seed 2 steps: 1
// [bandit(hi_name=Gambler, lo_name=Teacher) 2] true
