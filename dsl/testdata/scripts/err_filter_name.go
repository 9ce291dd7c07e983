// A filter expression reads group statistics, not trajectory fields.
package main

import "ragen"

func main() {
	_ = ragen.Filter(`invalid_actions`, ragen.TopP(0.5))
}

// Error:
// filter expression: unknown name invalid_actions (1:1)
//  | invalid_actions
//  | ^
