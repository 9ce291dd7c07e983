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
// from them: yaegi extract skips them. The same pass writes each package's
// doc comments into Docs (the *_doc.go files), which the kernel shows on
// inspect. The kernel's own packages, display and cellctx, are generated
// here too, without the hooks that are the kernel's alone (a cell must not
// replace the publisher of displays or the cell's context).
package stdlib

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/traefik/yaegi/interp"
	yaegistd "github.com/traefik/yaegi/stdlib"
)

//go:generate go run ./internal/gen -name stdlib -exclude github.com/ragen-go/ragen/kernel/display.SetPublisher,github.com/ragen-go/ragen/kernel/display.Publisher,github.com/ragen-go/ragen/kernel/display.Normalize,github.com/ragen-go/ragen/kernel/display.Data,github.com/ragen-go/ragen/kernel/display.PublishData,github.com/ragen-go/ragen/kernel/cellctx.Set,github.com/ragen-go/ragen/kernel/cellctx.Observed github.com/ragen-go/ragen/dsl github.com/ragen-go/ragen/envs github.com/ragen-go/ragen/plots github.com/ragen-go/ragen/engine/metrics github.com/ragen-go/ragen/engine/train github.com/ragen-go/ragen/engine/algo github.com/ragen-go/ragen/engine/rollout github.com/ragen-go/ragen/engine/model gorgonia.org/tensor github.com/ragen-go/ragen/kernel/display github.com/ragen-go/ragen/kernel/cellctx

// Symbols are the generated tables of our packages, by "import/path/name",
// plus the short import paths of Aliases.
var Symbols = interp.Exports{}

// Docs are the doc comments of our packages' exported symbols, by import
// path (short ones included) and then "Name", "Type.Method", "Type.Field"
// ("" is the package's doc).
var Docs = map[string]map[string]string{}

// Aliases are the short import paths cells use for our packages: "ragen"
// is package dsl, the experiment API.
var Aliases = map[string]string{
	"ragen":         "github.com/ragen-go/ragen/dsl",
	"ragen/display": "github.com/ragen-go/ragen/kernel/display",
	"ragen/cellctx": "github.com/ragen-go/ragen/kernel/cellctx",
}

func init() {
	for short, full := range Aliases {
		Symbols[short+"/"+path.Base(short)] = Symbols[full+"/"+path.Base(full)]
		Docs[short] = Docs[full]
	}
}

// Denied are standard packages a cell may not import. yaegi's tables leave
// them out already; Exports checks that it stays so.
var Denied = []string{"os/exec", "unsafe", "syscall", "plugin"}

// BuildTag is set in every interpreter: a program meant for `ragen
// script` starts with `//go:build ragen`, so that the go tool, which cannot
// resolve its "ragen" import, skips it (examples/ does this).
const BuildTag = "ragen"

// Exports is every package an interpreter of NewInterpreter can import:
// the allowed standard library and our packages, by "import/path/name".
func Exports() interp.Exports {
	ex := interp.Exports{}
	for key, syms := range yaegistd.Symbols {
		if !denied(key) {
			ex[key] = syms
		}
	}
	for key, syms := range Symbols {
		ex[key] = syms
	}
	return ex
}

// Options are what differs between the interpreters of the kernel,
// `ragen-run` and `ragen script`.
type Options struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Args           []string // os.Args as the program sees it
	// Source is where Go files are read from (EvalPath, and the packages a
	// program imports by a relative path); nil: the OS's files.
	Source fs.FS
}

// NewInterpreter is the one place an interpreter is made: the kernel's and
// ragen-run's sessions and `ragen script` get theirs here. It imports
// Exports, sets BuildTag, and is restricted: os.Exit and log.Fatal panic
// instead of ending the process, and os.Getenv/Setenv see a copy of the
// environment, so a cell cannot end the kernel or change its environment.
func NewInterpreter(opts Options) (*interp.Interpreter, error) {
	i := interp.New(interp.Options{
		Stdin:                opts.Stdin,
		Stdout:               opts.Stdout,
		Stderr:               opts.Stderr,
		Args:                 opts.Args,
		Env:                  os.Environ(),
		BuildTags:            []string{BuildTag},
		SourcecodeFilesystem: opts.Source,
	})
	if err := i.Use(Exports()); err != nil {
		return nil, fmt.Errorf("stdlib: %w", err)
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
