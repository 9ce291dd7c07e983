package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ragen-go/ragen/dsl"
	"github.com/ragen-go/ragen/kernel"
	"github.com/ragen-go/ragen/kernel/cellctx"
	"github.com/ragen-go/ragen/kernel/display"
	"github.com/ragen-go/ragen/kernel/live"
	"github.com/ragen-go/ragen/kernel/session"
)

func init() {
	register("kernel", "run the Jupyter kernel (-f connection.json) or install its kernelspec (install)", runKernel)
}

func runKernel(args []string) error {
	if len(args) > 0 && args[0] == "install" {
		return installKernel(args[1:])
	}
	fs := flag.NewFlagSet("ragen kernel", flag.ContinueOnError)
	connFile := fs.String("f", "", "Jupyter connection file (Jupyter passes {connection_file})")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ragen kernel -f connection.json\n       ragen kernel install [--user | --prefix DIR]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *connFile == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("-f connection.json is required")
	}
	return kernel.Run(context.Background(), *connFile, kernel.Options{Setup: setupRagen})
}

// setupRagen points the DSL's hooks at the running cell: its context
// (interrupts stop training), its displays, and a live view (progress bar
// and chart) per training run. A DSL display id shows a
// display the first time and updates it afterwards.
func setupRagen(s *session.Session) error {
	dsl.SetContext(cellctx.Context)
	dsl.SetObserver(live.Observer(display.PublishData, live.Options{}))
	var mu sync.Mutex
	shown := map[string]bool{}
	dsl.SetDisplay(func(bundle map[string]any, id string) {
		d := display.Data{Bundle: bundle, ID: id}
		if id != "" {
			mu.Lock()
			d.Update = shown[id]
			shown[id] = true
			mu.Unlock()
		}
		display.PublishData(d)
	})
	return nil
}

func installKernel(args []string) error {
	fs := flag.NewFlagSet("ragen kernel install", flag.ContinueOnError)
	user := fs.Bool("user", false, "install for the current user (~/.local/share/jupyter/kernels)")
	prefix := fs.String("prefix", "", "install under `DIR`/share/jupyter/kernels")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	dir, err := kernel.KernelsDir(*user, *prefix)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the ragen binary: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("cannot find the ragen binary: %w", err)
	}
	path, err := kernel.Install(dir, exe)
	if err != nil {
		return err
	}
	fmt.Printf("installed kernelspec %s in %s\n", kernel.SpecName, path)
	return nil
}
