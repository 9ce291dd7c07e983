package webshop

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"

	"github.com/ragen-go/ragen/envs"
)

// perPage is the number of results on one results page, as in WebShop.
const perPage = 10

// priceSteps are WebShop's price bounds: 10, 20, …, 990 dollars.
func priceSteps() []float64 {
	s := make([]float64, 0, 99)
	for i := 1; i < 100; i++ {
		s = append(s, 10*float64(i))
	}
	return s
}

// noBound is the price bound of a goal whose product is too dear for two
// steps above it (WebShop's 1000000).
const noBound = 1e6

// The pages of the shop.
type page int

const (
	pageSearch page = iota
	pageResults
	pageItem
	pageDone
)

const instruction = "You are shopping online for what the instruction describes. " +
	"Each page lists the actions you can take on it: search[your query] on the search page, " +
	"and click[...] on a button, an item id or an option value. Find a product that matches " +
	"the instruction, choose its options, and click[buy now]. Answer with one action, " +
	"like <answer>search[red cotton t-shirt]</answer> or <answer>click[buy now]</answer>."

// Env is one WebShop-lite session. Create it with New; it is not safe for
// concurrent use (instances share their catalogue, which is immutable).
type Env struct {
	cfg  Config
	cat  *Catalog
	goal Goal

	page    page
	query   string
	results []int             // product indices of the last search, best first
	pageNo  int               // results page shown, from 0
	item    int               // product index on the item page
	chosen  map[string]string // option group → chosen value on the item page
	steps   int               // valid actions this episode
	found   bool              // the target's item page was opened
	bought  int               // product index bought, -1 if none
	score   Score             // of the purchase
}

// New returns an environment for cfg (the catalogue is built on first use
// and shared), or an error naming the invalid field. Call Reset before Step.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Env{cfg: cfg, cat: GetCatalog(cfg.CatalogSeed, cfg.Products), page: pageDone, bought: -1}, nil
}

// Catalog returns the environment's catalogue.
func (e *Env) Catalog() *Catalog { return e.cat }

// Goal returns the current episode's goal.
func (e *Env) Goal() Goal { return e.goal }

// Describe implements envs.Env.
func (e *Env) Describe() envs.Description {
	return envs.Description{
		Name:                 Name,
		Instruction:          instruction,
		MaxActionsPerTurn:    e.cfg.MaxActionsPerTurn,
		MaxActionsPerEpisode: e.cfg.MaxActionsPerEpisode,
		MaxTurns:             e.cfg.MaxTurns,
	}
}

// Reset draws the episode's goal from seed and opens the search page.
func (e *Env) Reset(seed int64) (string, error) {
	e.goal = drawGoal(rand.New(rand.NewSource(seed)), e.cat)
	e.page, e.query, e.results, e.pageNo = pageSearch, "", nil, 0
	e.item, e.chosen, e.steps, e.found, e.bought, e.score = -1, nil, 0, false, -1, Score{}
	return e.Render(), nil
}

// drawGoal picks a target product and asks for its type, one to three of
// its attributes, one value of each of its options and a price bound: two
// of the four multiples of 10 dollars above its price are drawn and the
// larger is the bound, as WebShop does.
func drawGoal(rng *rand.Rand, cat *Catalog) Goal {
	p := &cat.Products[rng.Intn(len(cat.Products))]
	g := Goal{Target: p.ID, Type: p.Type, Category: p.Category, Nouns: p.Nouns}
	g.Attrs = sample(rng, p.Attrs, 1+rng.Intn(min(3, len(p.Attrs))))
	var optText []string
	for _, grp := range p.Options {
		v := grp.Values[rng.Intn(len(grp.Values))]
		g.Options = append(g.Options, v)
		optText = append(optText, grp.Name+": "+v)
	}
	var above []float64
	for _, s := range priceSteps() {
		if s > p.Price && len(above) < 4 {
			above = append(above, s)
		}
	}
	g.PriceUpper = noBound
	if len(above) >= 2 {
		two := sample2(rng, above)
		g.PriceUpper = max(two[0], two[1])
	}
	g.Instruction = instructionText(rng, &g, optText)
	return g
}

// sample2 draws two distinct elements.
func sample2(rng *rand.Rand, xs []float64) [2]float64 {
	i := rng.Intn(len(xs))
	j := rng.Intn(len(xs) - 1)
	if j >= i {
		j++
	}
	return [2]float64{xs[i], xs[j]}
}

// instructionText phrases a goal in one of a few ways.
func instructionText(rng *rand.Rand, g *Goal, optText []string) string {
	attrs := strings.Join(g.Attrs, " and ")
	opts := ""
	if len(optText) > 0 {
		opts = " with " + strings.Join(optText, ", and ")
	}
	price := ""
	if g.PriceUpper < noBound {
		price = fmt.Sprintf("%.2f", g.PriceUpper)
	}
	thing := attrs + " " + g.Type
	switch rng.Intn(3) {
	case 0:
		s := "I need " + article(thing) + thing + opts
		if price != "" {
			s += ", and price lower than " + price + " dollars"
		}
		return s + "."
	case 1:
		verb := " that is "
		if article(g.Type) == "" {
			verb = " that are "
		}
		s := "Find me " + article(g.Type) + g.Type + verb + attrs + opts
		if price != "" {
			s += ", for less than $" + price
		}
		return s + "."
	default:
		s := "I am looking for " + article(thing) + thing + opts
		if price != "" {
			s += "; my budget is $" + price
		}
		return s + "."
	}
}

// article is "a " or "an " before a singular noun phrase, "" before a
// plural one (the catalogue's plural types end in s).
func article(phrase string) string {
	words := strings.Fields(phrase)
	last := words[len(words)-1]
	if strings.HasSuffix(last, "s") && !strings.HasSuffix(last, "ss") {
		return ""
	}
	if strings.ContainsRune("aeiou", rune(phrase[0])) {
		return "an "
	}
	return "a "
}

// Render implements envs.Env: the current page with the instruction on top
// and the available actions at the bottom.
func (e *Env) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Instruction: %s\n", e.goal.Instruction)
	switch e.page {
	case pageSearch:
		b.WriteString("[Search page]\nType a query to search the shop.\n")
	case pageResults:
		pages := (len(e.results) + perPage - 1) / perPage
		if len(e.results) == 0 {
			fmt.Fprintf(&b, "[Results for %q: no items]\n", e.query)
		} else {
			fmt.Fprintf(&b, "[Results for %q: page %d of %d, %d items]\n", e.query, e.pageNo+1, pages, len(e.results))
		}
		for _, i := range e.pageItems() {
			p := &e.cat.Products[i]
			fmt.Fprintf(&b, "%s | %s | $%.2f\n", p.ID, p.Title, p.Price)
		}
	case pageItem:
		p := &e.cat.Products[e.item]
		fmt.Fprintf(&b, "[Item %s]\n%s\nPrice: $%.2f\nFeatures: %s\n", p.ID, p.Title, p.Price, strings.Join(p.Attrs, ", "))
		for _, g := range p.Options {
			vals := make([]string, len(g.Values))
			for i, v := range g.Values {
				vals[i] = v
				if e.chosen[g.Name] == v {
					vals[i] = v + " (selected)"
				}
			}
			fmt.Fprintf(&b, "%s: %s\n", g.Name, strings.Join(vals, " | "))
		}
	case pageDone:
		if e.bought < 0 {
			b.WriteString("[Session over]\nNothing was bought.\n")
			return b.String() + "Available actions: none"
		}
		p := &e.cat.Products[e.bought]
		fmt.Fprintf(&b, "[Thank you for shopping]\nYou bought %s", p.Title)
		if len(e.chosen) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(e.chosenList(p), ", "))
		}
		fmt.Fprintf(&b, " for $%.2f.\nScore: %.2f\n", p.Price, e.score.Reward)
		return b.String() + "Available actions: none"
	}
	return b.String() + "Available actions: " + strings.Join(e.Available(), ", ")
}

// chosenList lists the chosen options of p as "size: m", in p's order.
func (e *Env) chosenList(p *Product) []string {
	var out []string
	for _, g := range p.Options {
		if v, ok := e.chosen[g.Name]; ok {
			out = append(out, g.Name+": "+v)
		}
	}
	return out
}

// pageItems are the product indices on the current results page.
func (e *Env) pageItems() []int {
	lo := e.pageNo * perPage
	return e.results[lo:min(lo+perPage, len(e.results))]
}

// Available lists the actions of the current page, as the page shows them.
func (e *Env) Available() []string {
	switch e.page {
	case pageSearch:
		return []string{"search[<your query>]"}
	case pageResults:
		acts := []string{"click[back to search]"}
		if e.pageNo > 0 {
			acts = append(acts, "click[< prev]")
		}
		if (e.pageNo+1)*perPage < len(e.results) {
			acts = append(acts, "click[next >]")
		}
		for _, i := range e.pageItems() {
			acts = append(acts, "click["+e.cat.Products[i].ID+"]")
		}
		return acts
	case pageItem:
		acts := []string{"click[back to search]", "click[< prev]"}
		for _, g := range e.cat.Products[e.item].Options {
			for _, v := range g.Values {
				acts = append(acts, "click["+v+"]")
			}
		}
		return append(acts, "click[buy now]")
	}
	return nil
}

// parseAction splits "search[q]" or "click[x]" (any case, spaces allowed
// around the brackets, surrounding quotes or backticks ignored) into its
// verb and its argument with white space collapsed.
func parseAction(a string) (verb, arg string, ok bool) {
	a = strings.Trim(strings.TrimSpace(a), "\"'`")
	open := strings.IndexByte(a, '[')
	close := strings.LastIndexByte(a, ']')
	if open < 0 || close < open || strings.TrimSpace(a[close+1:]) != "" {
		return "", "", false
	}
	verb = strings.ToLower(strings.TrimSpace(a[:open]))
	if verb != "search" && verb != "click" {
		return "", "", false
	}
	arg = strings.Join(strings.Fields(a[open+1:close]), " ")
	return verb, arg, arg != ""
}

// isButton reports whether arg names the button (case and spaces ignored:
// "Next>" is "next >").
func isButton(arg, button string) bool {
	squash := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "")) }
	return squash(arg) == squash(button)
}

// Step implements envs.Env. The action is the answer text: search[query]
// on the search page, or click[...] on something the page lists. Anything
// else is invalid and changes nothing.
func (e *Env) Step(action string) envs.StepResult {
	if e.page == pageDone {
		return envs.StepResult{Observation: e.Render(), Done: true}
	}
	verb, arg, ok := parseAction(action)
	valid, effective := false, false
	if ok {
		valid, effective = e.apply(verb, arg)
	}
	r := envs.StepResult{Info: envs.Info{Valid: valid, Effective: effective}}
	if valid {
		e.steps++
		if e.page != pageDone && e.steps >= e.cfg.MaxSteps {
			e.page = pageDone // out of steps, nothing bought
		}
	}
	if e.page == pageDone {
		r.Done = true
		r.Info.Success = e.bought >= 0 && e.score.Reward >= 1-1e-9
		r.Reward = e.score.Reward
		if e.cfg.BinaryReward {
			r.Reward = 0
			if r.Info.Success {
				r.Reward = 1
			}
		}
		r.Info.Metrics = map[string]float64{
			"reward":           e.score.Reward,
			"r_type":           e.score.RType,
			"success_purchase": b2f(e.bought >= 0),
			"success_find":     b2f(e.found),
		}
	}
	r.Observation = e.Render()
	return r
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// apply performs a parsed action on the current page and reports whether
// the page allows it and whether it changed anything.
func (e *Env) apply(verb, arg string) (valid, effective bool) {
	if verb == "search" {
		if e.page != pageSearch {
			return false, false
		}
		e.query = arg
		e.results = e.results[:0]
		for _, h := range e.cat.index.search(arg, maxResults) {
			e.results = append(e.results, h.doc)
		}
		e.page, e.pageNo = pageResults, 0
		return true, true
	}
	if isButton(arg, "back to search") && (e.page == pageResults || e.page == pageItem) {
		e.page, e.chosen = pageSearch, nil
		return true, true
	}
	switch e.page {
	case pageResults:
		switch {
		case isButton(arg, "< prev"):
			if e.pageNo == 0 {
				return false, false
			}
			e.pageNo--
			return true, true
		case isButton(arg, "next >"):
			if (e.pageNo+1)*perPage >= len(e.results) {
				return false, false
			}
			e.pageNo++
			return true, true
		}
		for _, i := range e.pageItems() {
			p := &e.cat.Products[i]
			if strings.EqualFold(arg, p.ID) || strings.EqualFold(arg, p.Title) {
				e.page, e.item, e.chosen = pageItem, i, map[string]string{}
				e.found = e.found || p.ID == e.goal.Target
				return true, true
			}
		}
	case pageItem:
		p := &e.cat.Products[e.item]
		switch {
		case isButton(arg, "< prev"):
			e.page, e.chosen = pageResults, nil
			return true, true
		case isButton(arg, "buy now"):
			e.bought = e.item
			e.score = Evaluate(p, e.chosenValues(p), &e.goal)
			e.page = pageDone
			return true, true
		}
		for _, g := range p.Options {
			for _, v := range g.Values {
				if strings.EqualFold(arg, v) {
					changed := e.chosen[g.Name] != v
					e.chosen[g.Name] = v
					return true, changed
				}
			}
		}
	}
	return false, false
}

// chosenValues lists the chosen option values in p's option order.
func (e *Env) chosenValues(p *Product) []string {
	var out []string
	for _, g := range p.Options {
		if v, ok := e.chosen[g.Name]; ok {
			out = append(out, v)
		}
	}
	return out
}

// offers reports whether p has option value v, and in which group.
func offers(p *Product, v string) (string, bool) {
	for _, g := range p.Options {
		if slices.Contains(g.Values, v) {
			return g.Name, true
		}
	}
	return "", false
}
