// Command ragen is the project's tool: the Jupyter kernel, its installer,
// environment play, training from the terminal, benchmarks. Each subcommand
// lives in its own file and registers itself in init.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

// A command is one subcommand: `ragen NAME args...`.
type command struct {
	summary string                    // one line for the usage text
	run     func(args []string) error // args exclude the command name
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: ragen COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if c.summary != "" { // "" marks a command programs run, not people
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'ragen COMMAND -h' for a command's flags.")
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	if os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		return
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "ragen: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	err := cmd.run(os.Args[2:])
	if errors.Is(err, flag.ErrHelp) { // -h: the command printed its usage, as asked
		return
	}
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "ragen") {
			msg = "ragen " + os.Args[1] + ": " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}
