// Command gen writes the yaegi symbol tables and the doc tables of the
// packages named on its command line into the current directory
// (stdlib/stdlib.go runs it through go generate; see extract.Command for
// its arguments).
package main

import (
	"fmt"
	"os"

	"github.com/ragen-go/ragen/stdlib/internal/extract"
)

func main() {
	files, err := extract.Command(os.Args[1:])
	if err == nil {
		for f, src := range files {
			if err = os.WriteFile(f, src, 0o644); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
