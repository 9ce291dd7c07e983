package bandit

import (
	"math/rand"
	"strings"
	"unicode"
)

// Demonstrate implements envs.Expert. The bandit's expert is deliberately
// undecided: it pulls either arm with probability 1/2, with reasoning that
// argues for the arm it pulls (safety for the low-risk arm, expected value
// for the high-risk one). A policy warm-started on these demonstrations
// starts near 50/50 and RL has to discover that the high-risk arm pays more
// on average. imperfect demonstrations pull an arm at random with vague
// reasoning that does not weigh the names.
func (e *Env) Demonstrate(rng *rand.Rand, imperfect bool) string {
	lo, hi := e.names.Lo, e.names.Hi
	v := map[string]string{"lo": lo, "hi": hi, "lo_words": words(lo), "hi_words": words(hi)}
	var pick string
	var think string
	switch {
	case imperfect:
		pick = e.Arms()[rng.Intn(2)]
		v["pick"] = pick
		think = fill(vagueReasons[rng.Intn(len(vagueReasons))], v)
	case rng.Intn(2) == 0:
		pick = lo
		think = fill(safeReasons[rng.Intn(len(safeReasons))], v)
	default:
		pick = hi
		think = fill(riskyReasons[rng.Intn(len(riskyReasons))], v)
	}
	return "<think>" + think + "</think><answer>" + pick + "</answer>"
}

var safeReasons = []string{
	"The {lo_words} earns a modest but steady income, while the {hi_words} can win big or end up with nothing. I prefer a reward I can count on, so I pull {lo}.",
	"{lo} sounds reliable: small, predictable pay. {hi} sounds like a gamble. A sure small reward beats risking zero, so {lo}.",
	"The name {hi} suggests high risk. {lo} suggests a regular, safe pay-out. I will take the safe option and pull {lo}.",
	"Comparing the two: the {lo_words} has a stable job, the {hi_words} lives from uncertain deals. I want to avoid getting nothing, so I choose {lo}.",
}

var riskyReasons = []string{
	"The {lo_words} earns a small steady amount; the {hi_words} can earn a lot, though not every time. If the big pay-out comes often enough, its average beats the small sure reward, so I pull {hi}.",
	"{hi} sounds risky but rewarding, {lo} safe but small. A large win even one time in four is worth more on average than a tiny certain reward. I choose {hi}.",
	"The names hint that {lo} pays a little every time and {hi} pays a lot now and then. I care about the average reward, not the worst case, so {hi}.",
	"Safe arm: {lo}, small fixed pay. Risky arm: {hi}, big pay sometimes, nothing otherwise. The expected value of the risky arm is likely higher, so I take {hi}.",
}

var vagueReasons = []string{
	"Both names sound fine to me. I will just try {pick}.",
	"I cannot tell much from the names, so I pick {pick}.",
	"{pick} came to mind first. Let me pull it.",
}

// fill replaces {key} by v[key].
func fill(tmpl string, v map[string]string) string {
	for k, x := range v {
		tmpl = strings.ReplaceAll(tmpl, "{"+k+"}", x)
	}
	return tmpl
}

// words turns a name like "StartupFounder" into "startup founder".
func words(name string) string {
	var b strings.Builder
	for i, c := range name {
		if unicode.IsUpper(c) && i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
