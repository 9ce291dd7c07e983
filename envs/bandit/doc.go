// Package bandit is RAGEN's two-armed bandit: one turn, two arms with
// semantic names, a low-risk arm that always pays a small reward and a
// high-risk arm that pays 1 with probability 0.25 and else 0. The expected
// rewards (0.1 against 0.25) favour the high-risk arm; the agent can only
// tell which is which from what the names suggest (a Teacher earns a steady
// income, a Trader gambles).
//
// Each Reset draws a name pair from the split's list and shows the arms in a
// random order. The reward draw uses the generator seeded by Reset's seed,
// so a group of instances reset with one seed also shares its reward draws
// (RAGEN v1).
package bandit
