package webshop

import (
	"math/rand"
	"testing"
)

// BenchmarkCatalog measures generating and indexing the default
// 1000-product catalogue (done once per process and shared).
func BenchmarkCatalog(b *testing.B) {
	for i := 0; i < b.N; i++ {
		NewCatalog(generateProducts(rand.New(rand.NewSource(int64(i))), 1000))
	}
}

// BenchmarkSearch measures one BM25 query on the default catalogue.
func BenchmarkSearch(b *testing.B) {
	cat := GetCatalog(0, 1000)
	for i := 0; i < b.N; i++ {
		cat.index.search("long sleeve cotton t-shirt", maxResults)
	}
}

// BenchmarkStep measures environment steps per second over whole
// episodes: search, open the first result, choose its first option, buy,
// reset. Five steps (counting the Reset) per episode.
func BenchmarkStep(b *testing.B) {
	e, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	seed := int64(0)
	e.Reset(seed)
	for i := 0; i < b.N; i++ {
		switch i % 5 {
		case 0:
			e.Step("search[" + e.goal.Type + "]")
		case 1:
			e.Step("click[" + e.cat.Products[e.pageItems()[0]].ID + "]")
		case 2:
			e.Step("click[" + e.cat.Products[e.item].Options[0].Values[0] + "]")
		case 3:
			e.Step("click[buy now]")
		case 4:
			seed++
			e.Reset(seed)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}
