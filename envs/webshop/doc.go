// Package webshop is WebShop-lite: RAGEN's WebShop task (Yao et al., 2022)
// on a synthetic catalogue, so it needs no download, Java or search server.
//
// A catalogue of products (categories, product types, titles, attributes,
// options such as size and colour, prices) is generated deterministically
// from a seed. Each episode draws a shopping instruction from its seed — a
// target product's type, some of its attributes, one value of each of its
// options and a price bound ("I need a long sleeve cotton t-shirt in navy,
// size large, and price lower than 30.00 dollars") — and the agent shops
// through text pages:
//
//   - the search page: search[query] runs a BM25 keyword search over the
//     titles and attributes (k1 = 1.5, b = 0.75; ties by catalogue order),
//     keeping the best 50 results;
//   - the results page, 10 per page: click[item id] opens an item,
//     click[next >] and click[< prev] turn pages, click[back to search];
//   - the item page (title, price, attributes, options): click[option value]
//     selects an option, click[buy now] buys, click[< prev] returns to the
//     results, click[back to search].
//
// Every page lists the actions available on it. WebShop is a language
// environment: the answer text is the action, matched case-insensitively;
// an action not available on the page is invalid and changes nothing.
//
// Buying ends the episode with WebShop's score in [0, 1] (get_reward in
// web_agent_site/engine/goal.py):
//
//	reward = r_type · (attributes matched + options matched + [price ≤ bound])
//	                / (goal attributes + goal options + 1)
//
// where an attribute matches when a product attribute has fuzzy token-set
// similarity above 85 or the title contains it, an option matches the same
// way after colour normalisation, and r_type ∈ {0, 0.1, 0.5, 1} grades how
// well the product's type fits (same search query, ≥ 2 shared category
// levels, share of the goal title's nouns). The episode succeeds when the
// reward is 1. WebShop's noun tagging (spaCy) is replaced by the catalogue's
// own nouns of each title: its brand and product-type words.
package webshop
