// The caret of a multi-line expression points into the right line.
package main

import "ragen"

func main() {
	_ = ragen.Reward(`success
    ? 10
    : sum(turns, .rewrd)`)
}

// Error:
// reward expression: type turn has no field rewrd (3:19)
//  |     : sum(turns, .rewrd)
//  | ..................^
