// Display publishes through the kernel's hook (here: the text/plain form).
package main

import "ragen"

func main() {
	ragen.Markdown("# Results")
	ragen.Display(&ragen.Table{Title: "scores", Columns: []string{"arm", "reward"}, Rows: [][]string{{"Teacher", "0.15"}, {"Gambler", "1"}}})
	ragen.HTML("<b>done</b>")
	ragen.Display(ragen.StarPOS().FilterRatio)
}

// Output:
// # Results
// scores
// arm      reward
// Teacher    0.15
// Gambler       1
// <b>done</b>
// 0.25
