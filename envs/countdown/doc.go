// Package countdown is RAGEN's Countdown: given a few numbers and a
// target, answer an arithmetic expression that uses every number exactly
// once and equals the target. One turn.
//
// RAGEN reads its instances from a downloaded data set; ours are generated:
// Reset draws the count of numbers and the numbers, lists the integer
// targets in [1, max_target] that an expression over them can reach (an
// exhaustive search) and draws the target among those, so every instance is
// solvable. The ops option sets which operators the reaching expression may
// use: "+-" (the default) keeps instances solvable by sums and differences,
// as RAGEN's loader filters its data; "+-*/" admits any target. The agent
// may always use all four operators and parentheses.
//
// Reward, as RAGEN scores it: 0 when the numbers in the answer (the runs of
// digits, as a multiset) are not exactly the given ones; else 1 when the
// expression's exact value is the target; else 0.1 for the right format
// (also for an expression that does not parse or divides by zero).
package countdown
