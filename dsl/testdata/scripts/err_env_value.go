// An option value of the wrong type names the option.
package main

import "ragen"

func main() {
	_ = ragen.FrozenLake(ragen.Option("size", "big"))
}

// Error:
// frozenlake option size: want int, got string big
