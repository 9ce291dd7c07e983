package webshop

import (
	"slices"
	"strings"
)

// Goal is one shopping instruction: what the buyer wants.
type Goal struct {
	Instruction string   // the text the agent reads
	Target      string   // id of the product the goal was drawn from
	Type        string   // product type (WebShop's query)
	Category    string   // the target's category path
	Nouns       []string // the target title's nouns
	Attrs       []string // wanted attributes
	Options     []string // wanted option values, one per option group
	PriceUpper  float64  // price bound in dollars
}

// Score is WebShop's reward for a purchase with its parts.
type Score struct {
	Reward        float64 // r_type · (attrs + options + price) / (|attrs| + |options| + 1)
	RType         float64 // 1, 0.5, 0.1 or 0: how well the product's type fits
	AttrMatches   int     // goal attributes found on the product
	OptionMatches int     // goal options among the chosen ones
	PriceOK       bool    // price within the bound
	QueryMatch    bool    // same product type
	CategoryMatch bool    // at least two category levels shared
	TitleScore    float64 // share of the goal title's nouns in the product's
}

// Evaluate scores buying p with the chosen option values against g, as
// WebShop's get_reward does.
func Evaluate(p *Product, chosen []string, g *Goal) Score {
	var s Score
	s.RType, s.QueryMatch, s.CategoryMatch, s.TitleScore = typeReward(p, g)
	for _, ga := range g.Attrs {
		if hasAttr(p, ga) {
			s.AttrMatches++
		}
	}
	for _, gv := range g.Options {
		gv = normalizeColor(gv)
		for _, cv := range chosen {
			if tokenSetRatio(normalizeColor(cv), gv) > 85 {
				s.OptionMatches++
				break
			}
		}
	}
	s.PriceOK = p.Price <= g.PriceUpper
	num := float64(s.AttrMatches + s.OptionMatches)
	if s.PriceOK {
		num++
	}
	s.Reward = s.RType * num / float64(len(g.Attrs)+len(g.Options)+1)
	return s
}

// hasAttr reports whether p has the wanted attribute: one of its attributes
// is fuzzily the same (token-set ratio above 85), or its title contains it
// (WebShop also searches bullet points and description, which the
// catalogue's products do not have).
func hasAttr(p *Product, want string) bool {
	for _, pa := range p.Attrs {
		if tokenSetRatio(pa, want) > 85 {
			return true
		}
	}
	return strings.Contains(strings.ToLower(p.Title), want)
}

// typeReward grades the product's type against the goal's, as WebShop's
// get_type_reward: 1 by default; 0.5 when neither the query, nor two
// category levels, nor more than a fifth of the goal title's nouns match;
// 0.1 when under a tenth of the nouns match; 0 when none does.
func typeReward(p *Product, g *Goal) (r float64, queryMatch, categoryMatch bool, titleScore float64) {
	queryMatch = p.Type == g.Type
	shared := 0
	goalLevels := splitCategory(g.Category)
	for _, l := range uniq(splitCategory(p.Category)) {
		if slices.Contains(goalLevels, l) {
			shared++
		}
	}
	categoryMatch = shared >= 2
	want := uniq(g.Nouns)
	if len(want) == 0 {
		titleScore = 0.2
	} else {
		have := 0
		for _, w := range want {
			if slices.Contains(p.Nouns, w) {
				have++
			}
		}
		titleScore = float64(have) / float64(len(want))
	}
	r = 1
	if !(queryMatch || categoryMatch || titleScore > 0.2) {
		r = 0.5
	}
	if titleScore < 0.1 {
		r = 0.1
	}
	if titleScore == 0 {
		r = 0
	}
	return r, queryMatch, categoryMatch, titleScore
}

func splitCategory(c string) []string {
	parts := strings.Split(c, "›")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func uniq(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// colors are the colour words option values are normalised to.
var colors = []string{"beige", "berry", "black", "blue", "brass", "coral", "gray", "green", "navy", "nude",
	"oak", "pink", "plum", "red", "silver", "walnut", "white"}

// normalizeColor returns the first word of colors (in its order) that is a
// word of v, else v: "navy blue" → "blue", "small" → "small". WebShop
// matches substrings, so its "dark wash" becomes "ash"; whole words avoid
// that.
func normalizeColor(v string) string {
	words := tokenize(v)
	for _, c := range colors {
		if slices.Contains(words, c) {
			return c
		}
	}
	return v
}

// tokenSetRatio is fuzzywuzzy's token_set_ratio: both strings become sets
// of lower-case alphanumeric tokens; with I their sorted intersection and
// A, B the sorted rests, it is the best ratio among (I, I+A), (I, I+B) and
// (I+A, I+B), where ratio(x, y) = round(100 · 2·LCS(x, y) / (|x| + |y|))
// (the normalised insertion/deletion similarity). 0 if either is empty.
func tokenSetRatio(a, b string) int {
	ta, tb := uniq(tokenize(a)), uniq(tokenize(b))
	if len(ta) == 0 || len(tb) == 0 {
		return 0
	}
	slices.Sort(ta)
	slices.Sort(tb)
	var inter, onlyA, onlyB []string
	for _, t := range ta {
		if slices.Contains(tb, t) {
			inter = append(inter, t)
		} else {
			onlyA = append(onlyA, t)
		}
	}
	for _, t := range tb {
		if !slices.Contains(ta, t) {
			onlyB = append(onlyB, t)
		}
	}
	sect := strings.Join(inter, " ")
	withA := strings.TrimSpace(sect + " " + strings.Join(onlyA, " "))
	withB := strings.TrimSpace(sect + " " + strings.Join(onlyB, " "))
	return max(ratio(sect, withA), ratio(sect, withB), ratio(withA, withB))
}

// ratio is round(100 · 2·LCS(x, y) / (|x| + |y|)) over bytes; 0 when both
// are empty.
func ratio(x, y string) int {
	if len(x)+len(y) == 0 {
		return 0
	}
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			switch {
			case x[i-1] == y[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	lcs := prev[len(y)]
	return (400*lcs + len(x) + len(y)) / (2 * (len(x) + len(y))) // rounded half up
}
