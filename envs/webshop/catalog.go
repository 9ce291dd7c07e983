package webshop

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"sync"
)

// Product is one item of the catalogue.
type Product struct {
	ID       string   // "B0" and 8 letters or digits, like an ASIN
	Title    string   // brand, one or two attributes, the product type
	Type     string   // the product type, e.g. "t-shirt" (WebShop's query)
	Category string   // path, levels joined by " › "
	Price    float64  // dollars
	Attrs    []string // features, lower case, e.g. "long sleeve"
	Options  []OptionGroup
	Nouns    []string // the title's nouns: brand and type words, lower case
}

// OptionGroup is one choice on the item page: its name ("size") and the
// values this product offers.
type OptionGroup struct {
	Name   string
	Values []string
}

// productType describes one kind of product the generator makes.
type productType struct {
	name     string   // "t-shirt"
	category string   // "Fashion › Clothing › Tops › T-Shirts"
	attrs    []string // pool of features
	options  []OptionGroup
	lo, hi   float64 // price range in dollars
}

var (
	sizesClothing = []string{"small", "medium", "large", "x-large", "xx-large"}
	colorsBasic   = []string{"black", "white", "gray", "navy", "red", "blue", "green", "beige"}
	shoeSizes     = []string{"7", "8", "9", "10", "11", "12"}
	cableLengths  = []string{"3 ft", "6 ft", "10 ft", "15 ft"}
)

// types is the catalogue's vocabulary: five departments as in WebShop
// (fashion, beauty, grocery, furniture, electronics).
var types = []productType{
	{"t-shirt", "Fashion › Clothing › Tops › T-Shirts",
		[]string{"cotton", "polyester blend", "short sleeve", "long sleeve", "crew neck", "v-neck", "slim fit", "relaxed fit", "machine wash", "moisture wicking"},
		[]OptionGroup{{"size", sizesClothing}, {"color", colorsBasic}}, 8, 40},
	{"hoodie", "Fashion › Clothing › Tops › Hoodies",
		[]string{"fleece", "zip up", "pullover", "kangaroo pocket", "machine wash", "heavyweight", "cotton", "oversized"},
		[]OptionGroup{{"size", sizesClothing}, {"color", colorsBasic}}, 20, 70},
	{"jeans", "Fashion › Clothing › Bottoms › Jeans",
		[]string{"stretch", "slim fit", "straight leg", "high waist", "button fly", "distressed", "relaxed fit"},
		[]OptionGroup{{"size", []string{"28w", "30w", "32w", "34w", "36w"}}, {"color", []string{"dark wash", "light wash", "black", "gray"}}}, 25, 80},
	{"running shoes", "Fashion › Shoes › Athletic › Running Shoes",
		[]string{"lightweight", "breathable", "non slip", "memory foam", "mesh upper", "arch support", "wide toe box"},
		[]OptionGroup{{"size", shoeSizes}, {"color", colorsBasic}}, 30, 120},
	{"shampoo", "Beauty › Hair Care › Shampoo & Conditioner › Shampoo",
		[]string{"sulfate free", "paraben free", "for dry hair", "argan oil", "cruelty free", "tea tree", "color safe"},
		[]OptionGroup{{"size", []string{"8 fl oz", "16 fl oz", "32 fl oz"}}, {"scent", []string{"lavender", "coconut", "unscented", "citrus"}}}, 6, 30},
	{"face moisturizer", "Beauty › Skin Care › Face › Moisturizers",
		[]string{"spf 30", "fragrance free", "hyaluronic acid", "for sensitive skin", "oil free", "vegan", "anti aging"},
		[]OptionGroup{{"size", []string{"1.7 oz", "3.4 oz", "6 oz"}}}, 10, 50},
	{"lipstick", "Beauty › Makeup › Lips › Lipstick",
		[]string{"long lasting", "matte finish", "vegan", "cruelty free", "moisturizing", "waterproof"},
		[]OptionGroup{{"color", []string{"red", "nude", "pink", "berry", "coral", "plum"}}}, 5, 25},
	{"coffee beans", "Grocery › Beverages › Coffee › Whole Bean Coffee",
		[]string{"organic", "dark roast", "medium roast", "fair trade", "whole bean", "decaf", "single origin"},
		[]OptionGroup{{"size", []string{"12 oz", "2 lb", "5 lb"}}}, 8, 45},
	{"green tea", "Grocery › Beverages › Tea › Green Tea",
		[]string{"organic", "loose leaf", "tea bags", "gluten free", "non gmo", "caffeinated"},
		[]OptionGroup{{"size", []string{"20 count", "50 count", "100 count"}}, {"flavor", []string{"jasmine", "mint", "lemon", "original"}}}, 5, 25},
	{"protein bars", "Grocery › Snacks › Bars › Protein Bars",
		[]string{"gluten free", "low sugar", "high protein", "keto friendly", "non gmo", "plant based"},
		[]OptionGroup{{"size", []string{"12 count", "24 count"}}, {"flavor", []string{"chocolate", "peanut butter", "vanilla", "cookies and cream"}}}, 15, 45},
	{"office chair", "Home › Furniture › Office Furniture › Office Chairs",
		[]string{"ergonomic", "lumbar support", "adjustable height", "mesh back", "swivel", "easy assembly", "padded armrests"},
		[]OptionGroup{{"color", []string{"black", "gray", "white", "blue"}}}, 60, 300},
	{"bookshelf", "Home › Furniture › Living Room Furniture › Bookcases",
		[]string{"5 tier", "solid wood", "easy assembly", "industrial style", "space saving", "metal frame"},
		[]OptionGroup{{"color", []string{"walnut", "white", "black", "oak"}}}, 40, 200},
	{"bed sheets", "Home › Bedding › Sheets & Pillowcases › Sheet Sets",
		[]string{"cotton", "deep pocket", "wrinkle free", "breathable", "hypoallergenic", "microfiber"},
		[]OptionGroup{{"size", []string{"twin", "full", "queen", "king"}}, {"color", colorsBasic}}, 20, 90},
	{"table lamp", "Home › Lighting › Lamps › Table Lamps",
		[]string{"led", "dimmable", "usb port", "touch control", "modern", "fabric shade"},
		[]OptionGroup{{"color", []string{"black", "white", "brass", "silver"}}}, 15, 80},
	{"wireless earbuds", "Electronics › Audio › Headphones › Earbuds",
		[]string{"bluetooth", "noise cancelling", "waterproof", "long battery life", "charging case", "touch control"},
		[]OptionGroup{{"color", []string{"black", "white", "blue", "pink"}}}, 20, 150},
	{"phone charger", "Electronics › Accessories › Chargers › Wall Chargers",
		[]string{"fast charging", "usb c", "braided cable", "foldable plug", "dual port"},
		[]OptionGroup{{"size", cableLengths[:3]}, {"color", []string{"black", "white"}}}, 8, 30},
	{"bluetooth speaker", "Electronics › Audio › Speakers › Portable Speakers",
		[]string{"portable", "waterproof", "long battery life", "deep bass", "wireless", "built in microphone"},
		[]OptionGroup{{"color", []string{"black", "blue", "red", "gray"}}}, 20, 120},
	{"hdmi cable", "Electronics › Accessories › Cables › HDMI Cables",
		[]string{"4k", "high speed", "gold plated", "braided", "ethernet"},
		[]OptionGroup{{"size", cableLengths}}, 6, 25},
}

var brands = []string{"Northwind", "Bluepeak", "Evergreen", "Solara", "Kestrel", "Urbanline", "Brightway",
	"Lumen", "Coastal", "Ridgeway", "Vantage", "Harbor", "Nimbus", "Cedarly", "Orchid", "Summit", "Atlas",
	"Willow", "Zenith", "Pinecrest"}

// Catalog is a generated product catalogue with its search index. It is
// immutable and shared by every environment built with the same seed and
// size.
type Catalog struct {
	Products []Product
	byID     map[string]int
	index    *index
}

var (
	catalogMu    sync.Mutex
	catalogCache = map[[2]int64]*Catalog{}
)

// GetCatalog returns the catalogue of n products generated from seed,
// building it on first use.
func GetCatalog(seed int64, n int) *Catalog {
	catalogMu.Lock()
	defer catalogMu.Unlock()
	key := [2]int64{seed, int64(n)}
	if c, ok := catalogCache[key]; ok {
		return c
	}
	c := NewCatalog(generateProducts(rand.New(rand.NewSource(seed)), n))
	catalogCache[key] = c
	return c
}

// NewCatalog indexes products (for a hand-made catalogue in tests or a
// notebook); their IDs must be unique.
func NewCatalog(products []Product) *Catalog {
	c := &Catalog{Products: products, byID: make(map[string]int, len(products))}
	docs := make([]string, len(products))
	for i, p := range products {
		c.byID[strings.ToLower(p.ID)] = i
		docs[i] = p.Title + " " + strings.Join(p.Attrs, " ")
	}
	c.index = newIndex(docs)
	return c
}

// generateProducts draws n products: each a random type and brand, 3 or 4
// of the type's attributes (one or two of them in the title), a subset of
// at least two values of each option (all of them when fewer), and a price
// in the type's range ending in .99 or .49.
func generateProducts(rng *rand.Rand, n int) []Product {
	products := make([]Product, 0, n)
	ids := map[string]bool{}
	for len(products) < n {
		t := &types[rng.Intn(len(types))]
		brand := brands[rng.Intn(len(brands))]
		attrs := sample(rng, t.attrs, 3+rng.Intn(2))
		inTitle := attrs[:1+rng.Intn(2)]
		words := []string{brand}
		for _, a := range inTitle {
			if !overlaps(tokenize(a), tokenize(t.name)) { // no "High Protein Protein Bars"
				words = append(words, titleCase(a))
			}
		}
		words = append(words, titleCase(t.name))
		opts := make([]OptionGroup, len(t.options))
		for i, g := range t.options {
			k := len(g.Values)
			if k > 2 {
				k = 2 + rng.Intn(k-1)
			}
			vals := sample(rng, g.Values, k)
			// Keep the catalogue's order of values (sizes small to large).
			slices.SortFunc(vals, func(a, b string) int { return slices.Index(g.Values, a) - slices.Index(g.Values, b) })
			opts[i] = OptionGroup{Name: g.Name, Values: vals}
		}
		cents := []float64{0.99, 0.49}[rng.Intn(2)]
		price := math.Floor(t.lo+rng.Float64()*(t.hi-t.lo)) + cents
		id := ""
		for id == "" || ids[id] {
			id = randomID(rng)
		}
		ids[id] = true
		products = append(products, Product{
			ID:       id,
			Title:    strings.Join(words, " "),
			Type:     t.name,
			Category: t.category,
			Price:    price,
			Attrs:    attrs,
			Options:  opts,
			Nouns:    append([]string{strings.ToLower(brand)}, tokenize(t.name)...),
		})
	}
	return products
}

// overlaps reports whether two token lists share a token.
func overlaps(a, b []string) bool {
	for _, t := range a {
		if slices.Contains(b, t) {
			return true
		}
	}
	return false
}

// sample returns k distinct elements of pool in random order.
func sample(rng *rand.Rand, pool []string, k int) []string {
	perm := rng.Perm(len(pool))
	out := make([]string, k)
	for i := range out {
		out[i] = pool[perm[i]]
	}
	return out
}

// randomID draws an ASIN-like id: "B0" then 8 capital letters or digits.
func randomID(rng *rand.Rand) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := []byte("B0")
	for i := 0; i < 8; i++ {
		b = append(b, alphabet[rng.Intn(len(alphabet))])
	}
	return string(b)
}

// titleCase capitalises each word's first letter ("v-neck" → "V-Neck").
func titleCase(s string) string {
	b := []byte(s)
	for i := range b {
		if (i == 0 || b[i-1] == ' ' || b[i-1] == '-') && b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// Product returns the product with id (case-insensitive).
func (c *Catalog) Product(id string) (*Product, bool) {
	i, ok := c.byID[strings.ToLower(strings.TrimSpace(id))]
	if !ok {
		return nil, false
	}
	return &c.Products[i], true
}

// String summarises a product on one line, for tests and logs.
func (p *Product) String() string {
	return fmt.Sprintf("%s %q $%.2f %v %v", p.ID, p.Title, p.Price, p.Attrs, p.Options)
}
