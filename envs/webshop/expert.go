package webshop

import (
	"fmt"
	"math/rand"
	"strings"
)

// Demonstrate implements envs.Expert with the policy of a careful shopper:
// search with the instruction's key words (its attributes and the product
// type), open the listed product that would score best when bought with
// the wanted options (turning to the next page while none on this page is
// perfect), select each wanted option, buy. With imperfect true it makes
// one plausible mistake where it can: a vaguer search, opening another
// listed item, choosing a wrong option, or buying before choosing. The
// state is not changed.
func (e *Env) Demonstrate(rng *rand.Rand, imperfect bool) string {
	think, action := e.plan(rng, imperfect && rng.Intn(2) == 0)
	return "<think>" + think + "</think><answer>" + action + "</answer>"
}

// plan returns the reasoning and the action; mistake asks for a plausible
// wrong step.
func (e *Env) plan(rng *rand.Rand, mistake bool) (string, string) {
	g := &e.goal
	switch e.page {
	case pageSearch:
		q := strings.Join(g.Attrs, " ") + " " + g.Type
		if mistake {
			q = g.Type
			return pick(rng, []string{
				fmt.Sprintf("I need %s%s. A short query should do.", article(g.Type), g.Type),
				fmt.Sprintf("Let me just search for %s and look around.", g.Type),
			}), "search[" + q + "]"
		}
		return pick(rng, []string{
			fmt.Sprintf("The instruction asks for %s%s with these features: %s. I search for those key words.", article(g.Type), g.Type, strings.Join(g.Attrs, " and ")),
			fmt.Sprintf("I should search for the product type and its features: %s.", q),
			fmt.Sprintf("Key words from the instruction: %s. I will search with them.", q),
		}), "search[" + q + "]"
	case pageResults:
		return e.planResults(rng, mistake)
	case pageItem:
		return e.planItem(rng, mistake)
	}
	return "The session is over; nothing is left to do.", ""
}

// potential scores buying p with the wanted options it offers.
func (e *Env) potential(p *Product) Score {
	var chosen []string
	for _, v := range e.goal.Options {
		if _, ok := offers(p, v); ok {
			chosen = append(chosen, v)
		}
	}
	return Evaluate(p, chosen, &e.goal)
}

func (e *Env) planResults(rng *rand.Rand, mistake bool) (string, string) {
	items := e.pageItems()
	if len(items) == 0 {
		return pick(rng, []string{
			"The search found nothing. I go back and try other words.",
			"No results; I return to the search page.",
		}), "click[back to search]"
	}
	best, bestScore := items[0], -1.0
	for _, i := range items {
		if s := e.potential(&e.cat.Products[i]).Reward; s > bestScore {
			best, bestScore = i, s
		}
	}
	hasNext := (e.pageNo+1)*perPage < len(e.results)
	if mistake {
		i := items[rng.Intn(len(items))]
		p := &e.cat.Products[i]
		return fmt.Sprintf("%s at $%.2f looks close enough to what I need. I open it.", p.Title, p.Price), "click[" + p.ID + "]"
	}
	if bestScore < 1 && hasNext {
		return pick(rng, []string{
			"None of the items on this page has everything the instruction asks for. I look at the next page.",
			"These results miss a feature, an option or the price limit. Next page.",
		}), "click[next >]"
	}
	p := &e.cat.Products[best]
	why := fmt.Sprintf("%s (%s)", p.ID, p.Title)
	var have []string
	for _, a := range e.goal.Attrs {
		if hasAttr(p, a) {
			have = append(have, a)
		}
	}
	if len(have) > 0 {
		why += " has " + strings.Join(have, " and ") + " and"
	}
	if p.Price <= e.goal.PriceUpper {
		why += fmt.Sprintf(" costs $%.2f, within the budget", p.Price)
	} else {
		why += fmt.Sprintf(" costs $%.2f, over the budget", p.Price)
	}
	if bestScore < 1 {
		why += "; it is the closest match I can find"
	}
	return pick(rng, []string{why + ". I open it.", "Looking at the results, " + why + ". Let me check its options."}), "click[" + p.ID + "]"
}

func (e *Env) planItem(rng *rand.Rand, mistake bool) (string, string) {
	p := &e.cat.Products[e.item]
	for _, v := range e.goal.Options {
		group, ok := offers(p, v)
		if !ok || e.chosen[group] == v {
			continue
		}
		if mistake {
			if alt := otherValue(p, group, v, rng); alt != "" && e.chosen[group] == "" {
				return fmt.Sprintf("I need to pick a %s; %s seems right.", group, alt), "click[" + alt + "]"
			}
			return "The options look fine as they are. I buy it now.", "click[buy now]"
		}
		return pick(rng, []string{
			fmt.Sprintf("The instruction wants %s %s, and this item offers it. I select %s.", group, v, v),
			fmt.Sprintf("I still have to choose the %s: %s.", group, v),
			fmt.Sprintf("Next I set the %s to %s as asked.", group, v),
		}), "click[" + v + "]"
	}
	return pick(rng, []string{
		fmt.Sprintf("All the requested options are selected and the price is $%.2f. I buy it.", p.Price),
		"Everything matches what I chose; time to buy.",
		"The options are set. Buy now.",
	}), "click[buy now]"
}

// otherValue returns a value of p's group other than v, or "".
func otherValue(p *Product, group, v string, rng *rand.Rand) string {
	for _, g := range p.Options {
		if g.Name != group || len(g.Values) < 2 {
			continue
		}
		for {
			if alt := g.Values[rng.Intn(len(g.Values))]; alt != v {
				return alt
			}
		}
	}
	return ""
}

// pick returns a random element of options.
func pick(rng *rand.Rand, options []string) string { return options[rng.Intn(len(options))] }
