// An unknown sweep path lists the fields there are.
package main

import "ragen"

func main() {
	exp := ragen.Experiment{Env: ragen.Bandit()}
	ragen.Sweep(exp, "Filter.Rate", 1.0, 0.5)
}

// Error:
// Sweep: Filter has no field "Rate" (fields: Expr, Ratio, Above, DropZeroStd, Strategy, Value, TopPMode, Eps, Smallest, ExcludeZero, EmptyStop)
