// A reward expression must give a number.
package main

import "ragen"

func main() {
	_ = ragen.Reward(`success && format_ok`)
}

// Error:
// reward expression: expected float64, but got bool (1:1)
//  | success && format_ok
//  | ^
