package webshop

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/envs"
	"github.com/ragen-go/ragen/envs/envtest"
)

func TestBM25HandChecked(t *testing.T) {
	// Hand computation: N = 4 documents, average length 11/4 = 2.75,
	// k1 = 1.5, b = 0.75; "red" and "shirt" each occur in two documents,
	// idf = ln(1 + 2.5/2.5) = ln 2.
	//   doc 0 "red cotton shirt": 2 · ln2 · 2.5/(1 + 1.5·(0.25 + 0.75·3/2.75)) = 1.33181
	//   doc 2 "red scarf red":    ln2 · 2·2.5/(2 + 1.60227)                  = 0.96210
	//   doc 1 "blue cotton shirt": ln2 · 2.5/(1 + 1.60227)                   = 0.66591
	//   doc 3 "green tea" contains no query term.
	ix := newIndex([]string{"Red Cotton Shirt", "Blue Cotton Shirt", "Red Scarf red", "Green Tea"})
	hits := ix.search("red SHIRT, red!", 50)
	want := []hit{{0, 1.3318111766}, {2, 0.9620970330}, {1, 0.6659055883}}
	if len(hits) != len(want) {
		t.Fatalf("hits %v, want %v", hits, want)
	}
	for i := range want {
		if hits[i].doc != want[i].doc || math.Abs(hits[i].score-want[i].score) > 1e-9 {
			t.Fatalf("hit %d = %+v, want %+v", i, hits[i], want[i])
		}
	}
	// Equal scores keep catalogue order; the limit cuts.
	if h := ix.search("cotton", 50); len(h) != 2 || h[0].doc != 0 || h[1].doc != 1 || h[0].score != h[1].score {
		t.Fatalf("tie: %v", h)
	}
	if h := ix.search("cotton", 1); len(h) != 1 || h[0].doc != 0 {
		t.Fatalf("limit: %v", h)
	}
	if h := ix.search("!!! nothing", 50); len(h) != 0 {
		t.Fatalf("no match: %v", h)
	}
}

func TestTokenize(t *testing.T) {
	got := strings.Join(tokenize("  Slim-Fit T-Shirt, $19.99 (XL)"), "|")
	if got != "slim|fit|t|shirt|19|99|xl" {
		t.Fatal(got)
	}
}

func TestTokenSetRatio(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"long sleeve", "Sleeve, LONG", 100},
		{"cotton", "cotton blend", 100}, // a subset scores 100
		{"medium", "small", 18},         // LCS "m" … 2·1/11
		{"x-large", "xx-large", 93},     // "large x" vs "large xx": WebShop counts them as a match
		{"7", "8", 0},
		{"", "red", 0},
	} {
		if got := tokenSetRatio(c.a, c.b); got != c.want {
			t.Errorf("tokenSetRatio(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// shirt is a hand-made product for the reward cases.
func shirt() *Product {
	return &Product{
		ID: "B0TEST0001", Title: "Acme Long Sleeve Cotton T-Shirt", Type: "t-shirt",
		Category: "Fashion › Clothing › Tops › T-Shirts", Price: 18.99,
		Attrs:   []string{"long sleeve", "cotton", "machine wash"},
		Options: []OptionGroup{{"size", []string{"small", "medium"}}, {"color", []string{"navy", "red"}}},
		Nouns:   []string{"acme", "t", "shirt"},
	}
}

func shirtGoal() *Goal {
	return &Goal{Target: "B0TEST0001", Type: "t-shirt", Category: "Fashion › Clothing › Tops › T-Shirts",
		Nouns: []string{"acme", "t", "shirt"}, Attrs: []string{"cotton", "long sleeve"},
		Options: []string{"medium", "navy"}, PriceUpper: 30}
}

func TestRewardFormula(t *testing.T) {
	hoodie := &Product{ID: "B0TEST0002", Title: "Zenith Fleece Hoodie", Type: "hoodie",
		Category: "Fashion › Clothing › Tops › Hoodies", Price: 30, Attrs: []string{"fleece", "cotton"},
		Options: []OptionGroup{{"size", []string{"medium"}}}, Nouns: []string{"zenith", "hoodie"}}
	acmeHoodie := *hoodie
	acmeHoodie.Nouns = []string{"acme", "hoodie"}
	lamp := &Product{ID: "B0TEST0003", Title: "Acme Lamp", Type: "table lamp", Category: "Home › Lighting",
		Attrs: []string{"cotton"}, Nouns: []string{"acme", "lamp"}, Price: 5}
	over := shirtGoal()
	over.PriceUpper = 10
	longNouns := shirtGoal()
	longNouns.Nouns = []string{"acme", "a", "b", "c", "d", "e"} // 1/6 of the nouns
	longerNouns := shirtGoal()
	longerNouns.Nouns = []string{"acme", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} // 1/11

	for _, c := range []struct {
		name   string
		p      *Product
		chosen []string
		g      *Goal
		want   float64 // (attrs + options + price)/(2 + 2 + 1) · r_type
	}{
		{"perfect", shirt(), []string{"medium", "navy"}, shirtGoal(), 1},
		{"wrong size", shirt(), []string{"small", "navy"}, shirtGoal(), 4.0 / 5},
		{"no options chosen", shirt(), nil, shirtGoal(), 3.0 / 5},
		{"over the price bound", shirt(), []string{"medium", "navy"}, over, 4.0 / 5},
		{"other type, other brand", hoodie, []string{"medium"}, shirtGoal(), 0},
		{"other type, same brand", &acmeHoodie, []string{"medium"}, shirtGoal(), 3.0 / 5}, // cotton, medium, price
		{"type 0.5: nothing but a sixth of the nouns", lamp, nil, longNouns, 0.5 * 2 / 5},
		{"type 0.1: under a tenth of the nouns", lamp, nil, longerNouns, 0.1 * 2 / 5},
	} {
		s := Evaluate(c.p, c.chosen, c.g)
		if math.Abs(s.Reward-c.want) > 1e-12 {
			t.Errorf("%s: reward %v, want %v (%+v)", c.name, s.Reward, c.want, s)
		}
	}
	// An attribute found only in the title counts.
	p := shirt()
	p.Attrs = []string{"machine wash"}
	if s := Evaluate(p, []string{"medium", "navy"}, shirtGoal()); s.AttrMatches != 2 || s.Reward != 1 {
		t.Errorf("title attributes: %+v", s)
	}
}

func newEnv(t testing.TB) *Env {
	t.Helper()
	e, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// target returns the episode's target product.
func target(e *Env) *Product {
	p, _ := e.cat.Product(e.goal.Target)
	return p
}

func TestShoppingDynamics(t *testing.T) {
	e := newEnv(t)
	obs, _ := e.Reset(5)
	g := e.Goal()
	if !strings.HasPrefix(obs, "Instruction: "+g.Instruction+"\n[Search page]") || !strings.HasSuffix(obs, "Available actions: search[<your query>]") {
		t.Fatalf("search page:\n%s", obs)
	}
	invalid := func(a string) {
		t.Helper()
		before := e.Render()
		s := e.Step(a)
		if s.Info.Valid || s.Info.Effective || s.Done || s.Reward != 0 || e.Render() != before {
			t.Fatalf("%q: %+v", a, s)
		}
	}
	for _, a := range []string{"", "click[buy now]", "search[]", "search[   ]", "look around", "click[next >]", "search[x] please", "buy[shirt]"} {
		invalid(a)
	}
	s := e.Step("  `Search [ " + strings.ToUpper(target(e).Title) + " ]`")
	if !s.Info.Valid || !s.Info.Effective || !strings.Contains(s.Observation, "page 1 of 5, 50 items") {
		t.Fatalf("search:\n%s", s.Observation)
	}
	invalid("search[again]") // only on the search page
	invalid("click[< prev]") // first page
	invalid("click[B0NOSUCHID]")
	first := e.pageItems()[0]
	if s := e.Step("click[Next>]"); !s.Info.Valid || e.pageNo != 1 || !strings.Contains(s.Observation, "page 2 of 5") {
		t.Fatalf("next: %+v", s)
	}
	invalid("click[" + e.cat.Products[first].ID + "]") // not on this page
	e.Step("click[< prev]")
	if e.pageNo != 0 {
		t.Fatal("prev did not return to page 1")
	}
	// Open the target by its title (its exact title is the best match).
	if s := e.Step("click[" + strings.ToLower(target(e).Title) + "]"); !s.Info.Valid || e.page != pageItem {
		t.Fatalf("open by title: %+v", s)
	}
	p := &e.cat.Products[e.item]
	if !strings.Contains(e.Render(), "[Item "+p.ID+"]") || !strings.Contains(e.Render(), "click[buy now]") {
		t.Fatalf("item page:\n%s", e.Render())
	}
	invalid("click[no such option]")
	e.Step("click[< prev]")
	if e.page != pageResults || e.pageNo != 0 {
		t.Fatal("< prev on the item page does not return to the results")
	}
	e.Step("click[" + p.ID + "]")
	for _, v := range g.Options {
		if _, ok := offers(p, v); !ok {
			continue
		}
		if s := e.Step("click[" + strings.ToUpper(v) + "]"); !s.Info.Valid || !s.Info.Effective || !strings.Contains(s.Observation, v+" (selected)") {
			t.Fatalf("select %q: %+v", v, s)
		}
		if s := e.Step("click[" + v + "]"); !s.Info.Valid || s.Info.Effective {
			t.Fatalf("select %q again: %+v", v, s.Info)
		}
	}
	s = e.Step("click[Buy Now]")
	want := Evaluate(p, e.chosenValues(p), &g).Reward
	if !s.Done || s.Reward != want || s.Info.Metrics["reward"] != want || s.Info.Metrics["success_purchase"] != 1 {
		t.Fatalf("buy: %+v (want reward %v)", s, want)
	}
	if p.ID == g.Target && (!s.Info.Success || want != 1 || s.Info.Metrics["success_find"] != 1) {
		t.Fatalf("buying the target with its options: %+v", s)
	}
	if after := e.Step("click[back to search]"); !after.Done || after.Info.Valid || after.Reward != 0 {
		t.Fatalf("step after the purchase: %+v", after)
	}
}

func TestMaxStepsAndBinaryReward(t *testing.T) {
	c := DefaultConfig()
	c.MaxSteps = 3
	e, _ := New(c)
	e.Reset(1)
	e.Step("search[shirt]")
	e.Step("click[back to search]")
	s := e.Step("search[shirt]")
	if !s.Done || s.Reward != 0 || s.Info.Success || s.Info.Metrics["success_purchase"] != 0 || !strings.Contains(s.Observation, "Nothing was bought") {
		t.Fatalf("out of steps: %+v", s)
	}

	// Binary reward: a purchase scoring below 1 pays 0.
	c = DefaultConfig()
	c.BinaryReward = true
	e, _ = New(c)
	e.Reset(1)
	e.Step("search[" + e.goal.Type + "]")
	e.Step("click[" + e.cat.Products[e.pageItems()[0]].ID + "]")
	s = e.Step("click[buy now]") // no options chosen
	if raw := s.Info.Metrics["reward"]; raw >= 1 || s.Reward != 0 || !s.Done {
		t.Fatalf("binary reward: raw %v, reward %v", raw, s.Reward)
	}
}

func TestDeterminism(t *testing.T) {
	a := generateProducts(newRand(3), 200)
	b := generateProducts(newRand(3), 200)
	c := generateProducts(newRand(4), 200)
	same := func(x, y []Product) bool {
		for i := range x {
			if x[i].String() != y[i].String() {
				return false
			}
		}
		return true
	}
	if !same(a, b) || same(a, c) {
		t.Fatal("catalogue generation is not a function of its seed")
	}
	e1, e2 := newEnv(t), newEnv(t)
	instructions := map[string]bool{}
	for seed := int64(0); seed < 30; seed++ {
		o1, _ := e1.Reset(seed)
		e2.Reset(seed + 99)
		o2, _ := e2.Reset(seed)
		if o1 != o2 {
			t.Fatalf("seed %d: %q vs %q", seed, o1, o2)
		}
		instructions[e1.goal.Instruction] = true
	}
	if len(instructions) < 28 {
		t.Fatalf("30 seeds gave %d distinct instructions", len(instructions))
	}
}

// TestExpert plays whole episodes through the shared turn runner: the
// expert must reach reward 1 on nearly every seed, the imperfect expert
// on fewer.
func TestExpert(t *testing.T) {
	const n = 200
	perfect, imperfect := 0, 0
	var rewardSum float64
	for seed := int64(0); seed < n; seed++ {
		for _, im := range []bool{false, true} {
			ep, err := envs.Start(newEnv(t), seed, envs.DefaultTurnConfig())
			if err != nil {
				t.Fatal(err)
			}
			policy := envtest.ExpertPolicy(seed, im)
			for !ep.Done {
				r, _ := ep.Step(policy(ep))
				if r.Penalty != 0 || r.Invalid != 0 {
					t.Fatalf("seed %d: expert action refused: %+v", seed, r)
				}
			}
			if !im {
				rewardSum += ep.Return()
			}
			switch {
			case ep.Success && !im:
				perfect++
			case ep.Success:
				imperfect++
			}
		}
	}
	t.Logf("expert reward 1 on %d/%d seeds (mean reward %.3f); imperfect %d/%d", perfect, n, rewardSum/n, imperfect, n)
	if perfect < n*95/100 {
		t.Errorf("expert reached reward 1 on %d of %d seeds, want >= 95%%", perfect, n)
	}
	if imperfect >= perfect || imperfect < n/5 {
		t.Errorf("imperfect expert succeeded %d times (expert %d)", imperfect, perfect)
	}
}

func TestGolden(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	obs, _ := e.Reset(11)
	b.WriteString(obs + "\n\n")
	b.WriteString(e.Step("search["+strings.Join(e.goal.Attrs, " ")+" "+e.goal.Type+"]").Observation + "\n\n")
	b.WriteString(e.Step("click[next >]").Observation + "\n\n")
	b.WriteString(e.Step("click["+e.cat.Products[e.pageItems()[0]].ID+"]").Observation + "\n\n")
	p := &e.cat.Products[e.item]
	b.WriteString(e.Step("click["+p.Options[0].Values[0]+"]").Observation + "\n\n")
	b.WriteString(e.Step("click[buy now]").Observation + "\n")
	envtest.Golden(t, "pages.golden", b.String())

	for _, c := range []struct {
		name      string
		imperfect bool
	}{{"transcript_expert.golden", false}, {"transcript_imperfect.golden", true}} {
		got, err := envtest.Transcript(newEnv(t), 2, envtest.ExpertPolicy(5, c.imperfect))
		if err != nil {
			t.Fatal(err)
		}
		envtest.Golden(t, c.name, got)
	}
}

func TestOptions(t *testing.T) {
	for opts, want := range map[string]map[string]any{
		"webshop option products: must be in [20, 20000] (got 5)": {"products": 5},
		"webshop option max_steps: must be >= 1 (got 0)":          {"max_steps": 0},
		`unknown option "size"`:                                   {"size": 3},
	} {
		env, err := envs.New(Name, want)
		if err == nil || !strings.Contains(err.Error(), opts) || env != nil {
			t.Errorf("%v: %v, want %q", want, err, opts)
		}
	}
	env, err := envs.New(Name, map[string]any{"products": 100, "catalog_seed": 7, "binary_reward": true})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(env.(*Env).Catalog().Products); got != 100 {
		t.Fatalf("catalogue of %d products", got)
	}
	d := env.Describe()
	if d.MaxActionsPerTurn != 1 || d.MaxActionsPerEpisode != 9 || d.MaxTurns != 9 || len(d.Actions) != 0 {
		t.Fatalf("description %+v", d)
	}
}

func TestContract(t *testing.T) {
	envtest.Check(t, func() envs.Env { return newEnv(t) }, 0, 1, 2)
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

// FuzzStep: any answer text is either a valid action or changes nothing,
// and never panics, on every kind of page.
func FuzzStep(f *testing.F) {
	for _, s := range []string{"search[red shirt]", "click[next >]", "click[buy now]", "click[", "]]click[[", "search[]", "click[ back  to SEARCH ]", "`click[< prev]`", "\x00[\xff]"} {
		f.Add(s, 0)
	}
	e, err := New(DefaultConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, action string, pageKind int) {
		e.Reset(3)
		if pageKind%3 != 0 {
			e.Step("search[" + e.goal.Type + "]")
		}
		if pageKind%3 == 2 {
			e.Step("click[" + e.cat.Products[e.pageItems()[0]].ID + "]")
		}
		before := e.Render()
		s := e.Step(action)
		if !s.Info.Valid && (e.Render() != before || s.Info.Effective || s.Reward != 0) {
			t.Fatalf("invalid action %q changed the state", action)
		}
	})
}
