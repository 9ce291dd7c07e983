// An unknown name in a reward expression: line, column and a caret.
package main

import "ragen"

func main() {
	_ = ragen.Reward(`sucess ? 10 : env_reward`)
}

// Error:
// reward expression: unknown name sucess (1:1)
//  | sucess ? 10 : env_reward
//  | ^
