// Package envs defines the environment interface the agent plays through
// text, the registry that names environments for the DSL and notebooks, the
// one response parser shared by all of them, and the turn runner that applies
// a parsed answer to an environment. Each environment lives in a subpackage
// (envs/sokoban, envs/frozenlake, ...) and registers itself.
package envs
