// Package stdlib holds the yaegi symbol tables of the packages a notebook
// cell or a `ragen script` may import, and NewInterpreter, the one place an
// interpreter is configured (the kernel session, `ragen script` and the
// tests use it).
//
// A cell may import:
//
//   - the Go standard library as yaegi v0.16.1 exports it (the Go 1.22 API;
//     generic functions only where yaegi compiles them from source: cmp,
//     maps, part of slices), without os/exec, unsafe and syscall, and in
//     restricted mode: os.Exit and log.Fatal panic instead of ending the
//     process, and os.Getenv/Setenv see a copy of the environment;
//   - "ragen" (package dsl, the experiment API) and, by their full paths,
//     github.com/ragen-go/ragen/{dsl, envs, plots, engine/metrics,
//     engine/train, engine/algo, engine/rollout, engine/model} and
//     gorgonia.org/tensor (to inspect model weights).
//
// The tables in the generated files come from `go generate`, which runs
// yaegi's extract (vendored in internal/extract to load every package in one
// pass from the go command's export data); TestTablesUpToDate regenerates
// them and fails on any difference. Generic functions and types are absent
// from them: yaegi extract skips them.
package stdlib

import (
	"fmt"

	"github.com/traefik/yaegi/interp"
	yaegistd "github.com/traefik/yaegi/stdlib"
)

//go:generate go run ./internal/gen -name stdlib github.com/ragen-go/ragen/dsl github.com/ragen-go/ragen/envs github.com/ragen-go/ragen/plots github.com/ragen-go/ragen/engine/metrics github.com/ragen-go/ragen/engine/train github.com/ragen-go/ragen/engine/algo github.com/ragen-go/ragen/engine/rollout github.com/ragen-go/ragen/engine/model gorgonia.org/tensor

// Symbols are the generated tables of our packages, by "import/path/name",
// plus "ragen/ragen": package dsl under its short import path.
var Symbols = interp.Exports{}

// dslPath is package dsl's key in Symbols.
const dslPath = "github.com/ragen-go/ragen/dsl/dsl"

func init() {
	Symbols["ragen/ragen"] = Symbols[dslPath]
}

// Denied are standard packages a cell may not import. yaegi's tables leave
// them out already; NewInterpreter checks that it stays so.
var Denied = []string{"os/exec", "unsafe", "syscall", "plugin"}

// BuildTag is set in every interpreter: a program meant for `ragen
// script` starts with `//go:build ragen`, so that the go tool, which cannot
// resolve its "ragen" import, skips it (examples/ does this).
const BuildTag = "ragen"

// NewInterpreter returns an interpreter with the allowed standard library
// and our packages. opts is passed to yaegi as it is, except that BuildTag
// is added to BuildTags and Unrestricted is refused: a cell must not end the
// process (os.Exit) or read the real environment behind the kernel's back.
func NewInterpreter(opts interp.Options) (*interp.Interpreter, error) {
	if opts.Unrestricted {
		return nil, fmt.Errorf("stdlib: unrestricted interpreters are not allowed")
	}
	opts.BuildTags = append(append([]string(nil), opts.BuildTags...), BuildTag)
	i := interp.New(opts)
	std := interp.Exports{}
	for key, syms := range yaegistd.Symbols {
		if !denied(key) {
			std[key] = syms
		}
	}
	for _, ex := range []interp.Exports{std, Symbols} {
		if err := i.Use(ex); err != nil {
			return nil, fmt.Errorf("stdlib: %w", err)
		}
	}
	return i, nil
}

func denied(key string) bool {
	for _, d := range Denied {
		if len(key) > len(d) && key[:len(d)] == d && key[len(d)] == '/' {
			return true
		}
	}
	return false
}
