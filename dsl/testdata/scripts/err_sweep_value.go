// A sweep value must fit the field.
package main

import "ragen"

func main() {
	exp := ragen.Experiment{Env: ragen.Bandit()}
	ragen.Sweep(exp, "GroupSize", 4, 2.5)
}

// Error:
// Sweep: GroupSize is int: cannot set it to float64 2.5
