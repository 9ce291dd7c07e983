// RAGEN v2's filter options and a loss-mask expression compile in a cell
// to the trainer's settings.
package main

import (
	"fmt"

	"ragen"
)

func main() {
	exp := ragen.Experiment{
		Env:      ragen.Bandit(),
		Filter:   ragen.Filter("entropy_variance", ragen.TopPSoftmax(0.9), ragen.ExcludeZero(), ragen.StopAfterEmpty(5)),
		LossMask: `span == "answer" || turn == turns`,
	}
	cfg, err := exp.Config()
	if err != nil {
		panic(err)
	}
	a := cfg.Algo
	fmt.Println(exp.Filter)
	fmt.Println(a.FilterMetric, a.FilterStrategy, a.FilterValue, a.FilterTopPMode, a.FilterExcludeZero, cfg.FilterEmptyStop)
	fmt.Println(cfg.LossMask, cfg.LossMaskFunc != nil)
	exp.LossMask = "think"
	cfg, _ = exp.Config()
	fmt.Println(cfg.LossMask, cfg.LossMaskFunc != nil)
}

// Output:
// Filter("entropy_variance", TopPSoftmax(0.9), ExcludeZero(), StopAfterEmpty(5))
// entropy_variance top_p 0.9 softmax true 5
// span == "answer" || turn == turns true
// think false
