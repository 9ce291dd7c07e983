// Command gen writes the yaegi symbol tables of the packages named on its
// command line into the current directory, for a Go package named by -name
// (stdlib/stdlib.go runs it through go generate).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ragen-go/ragen/stdlib/internal/extract"
)

func main() {
	name := flag.String("name", "stdlib", "package name of the generated files")
	flag.Parse()
	files, err := extract.Generate(*name, flag.Args()...)
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
