// Package all registers every built-in environment: import it for its side
// effect where environments are named by string (the DSL, the play command).
//
//	import _ "github.com/ragen-go/ragen/envs/all"
package all

import (
	_ "github.com/ragen-go/ragen/envs/bandit"
	_ "github.com/ragen-go/ragen/envs/countdown"
	_ "github.com/ragen-go/ragen/envs/frozenlake"
	_ "github.com/ragen-go/ragen/envs/sokoban"
	_ "github.com/ragen-go/ragen/envs/webshop"
)
