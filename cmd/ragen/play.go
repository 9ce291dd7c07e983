package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strings"

	"github.com/ragen-go/ragen/envs"
	_ "github.com/ragen-go/ragen/envs/all"
)

func init() {
	register("play", "play an environment in the terminal, answering as the model would", func(args []string) error {
		return play(args, os.Stdin, os.Stdout)
	})
}

const playUsage = `usage: ragen play ENV [-seed N] [-opt key=value ...] [-no-think] [-penalty X]
       ragen play -list

Plays one episode of ENV. Each turn shows the prompt the model reads; type
the answer as the model would, on one line:
  <think>the goal is below</think><answer>Down || Down</answer>
or just the actions (Down || Down, or down down), which are read as the
answer. Arrow keys do not move.
:hint shows the expert's answer, :quit ends.
`

// optFlags collects repeated -opt key=value flags.
type optFlags []string

func (o *optFlags) String() string     { return strings.Join(*o, " ") }
func (o *optFlags) Set(v string) error { *o = append(*o, v); return nil }

// play runs `ragen play` reading answers from in and writing to out.
func play(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("play", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, playUsage); fs.PrintDefaults() }
	seed := fs.Int64("seed", 0, "episode seed: the same seed gives the same initial state")
	var opts optFlags
	fs.Var(&opts, "opt", "environment option key=value (repeatable); see -list")
	list := fs.Bool("list", false, "list the environments and their options")
	noThink := fs.Bool("no-think", false, "answers carry only <answer>…</answer>, no <think> block")
	penalty := fs.Float64("penalty", envs.DefaultFormatPenalty, "format penalty for a broken answer or an unknown action")
	// Flags may come before or after ENV.
	if err := fs.Parse(args); err != nil {
		return err
	}
	rest := fs.Args()
	var name string
	if len(rest) > 0 {
		name = rest[0]
		if err := fs.Parse(rest[1:]); err != nil {
			return err
		}
		if extra := fs.Args(); len(extra) > 0 {
			return fmt.Errorf("unexpected arguments %q (options go as -opt key=value)", extra)
		}
	}
	if *list {
		listEnvs(out)
		return nil
	}
	if name == "" {
		fs.Usage()
		return fmt.Errorf("name an environment: %s", strings.Join(envs.Names(), ", "))
	}
	spec, ok := envs.Lookup(name)
	if !ok {
		return fmt.Errorf("unknown environment %q (registered: %s)", name, strings.Join(envs.Names(), ", "))
	}
	values, err := optionValues(spec, opts)
	if err != nil {
		return err
	}
	env, err := envs.New(name, values)
	if err != nil {
		return err
	}
	cfg := envs.TurnConfig{Think: !*noThink, FormatPenalty: *penalty}
	ep, err := envs.Start(env, *seed, cfg)
	if err != nil {
		return err
	}
	pc := envs.PromptConfig{Think: cfg.Think}
	hints := rand.New(rand.NewSource(*seed))
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 64*1024), 1<<20)

	fmt.Fprintf(out, "ragen play %s, seed %d. Type the model's answer; :hint for the expert's, :quit to stop.\n", name, *seed)
	fmt.Fprintf(out, "\n--- system ---\n%s\n", envs.SystemMessage)
	prev := 0.0
	for !ep.Done {
		fmt.Fprintf(out, "\n--- user (turn %d) ---\n%s", ep.Turn+1, envs.UserMessage(ep.Desc, ep.Turn+1, prev, ep.Observation, ep.ActionsLeft, pc))
		var answer string
		for {
			fmt.Fprint(out, "> ")
			if !lines.Scan() {
				if err := lines.Err(); err != nil {
					return fmt.Errorf("reading the answer: %w", err)
				}
				fmt.Fprintln(out, "\n(input ended)")
				return nil
			}
			var dropped bool
			answer, dropped = stripControls(lines.Text())
			answer = strings.TrimSpace(answer)
			if answer == "" && dropped {
				fmt.Fprintln(out, "(arrow and other control keys are not moves; type the actions as words, e.g. up || left: no turn used)")
				continue
			}
			switch answer {
			case ":quit", ":q":
				return nil
			case ":hint":
				if x, ok := env.(envs.Expert); ok {
					fmt.Fprintln(out, x.Demonstrate(hints, false))
				} else {
					fmt.Fprintln(out, "(this environment has no expert)")
				}
				continue
			case "":
				continue
			}
			break
		}
		response := forgiving(actionWords(answer, ep.Desc.Actions), cfg.Think)
		if response != answer {
			fmt.Fprintf(out, "(read as %s)\n", response)
		}
		r, err := ep.Step(response)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\n--- turn %d ---\n%s", ep.Turn, r.Summary())
		prev = r.Reward
	}
	verdict := "failed"
	switch {
	case ep.Success:
		verdict = "solved"
	case ep.Turns[len(ep.Turns)-1].Truncated:
		verdict = "out of actions or turns"
	}
	fmt.Fprintf(out, "\n=== episode over: %s; return %s in %d turns ===\n%s\n",
		verdict, envs.FormatReward(ep.Return()), ep.Turn, strings.TrimRight(ep.Observation, "\n"))
	return nil
}

// stripControls removes terminal escape sequences and other control
// characters from a typed line, and reports whether there were any. A
// terminal in line mode passes the arrow keys through as ESC [ A (or ESC O A
// in application mode): read as an answer, they were an unknown action that
// cost a turn.
func stripControls(line string) (string, bool) {
	var b strings.Builder
	dropped := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == 0x1b: // ESC
			dropped = true
			switch {
			case i+1 < len(line) && line[i+1] == '[': // CSI: parameters, intermediates, a final byte @..~
				i += 2
				for i < len(line) && (line[i] < 0x40 || line[i] > 0x7e) {
					i++
				}
			case i+1 < len(line) && line[i+1] == 'O': // SS3: one byte
				i += 2
			default: // ESC and one byte (Alt-key), or a lone ESC
				i++
			}
		case c < 0x20 && c != '\t' || c == 0x7f:
			dropped = true
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), dropped
}

// actionWords reads a bare line of action names separated by spaces or
// commas ("up left", "Up, Left") as the answer "up || left", when every
// word is an action of the environment. Anything else, a line with tags
// or "||", or text for a language environment (no fixed actions), is
// left as typed.
func actionWords(line string, actions []string) string {
	if len(actions) == 0 || strings.ContainsAny(line, "<|") {
		return line
	}
	if _, ok := envs.MatchAction(strings.TrimSpace(line), actions); ok {
		return line // an action name with a space or comma in it
	}
	words := strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' })
	if len(words) < 2 {
		return line
	}
	for _, w := range words {
		if _, ok := envs.MatchAction(w, actions); !ok {
			return line
		}
	}
	return strings.Join(words, " "+envs.ActionSeparator+" ")
}

// forgiving turns what a person typed into a response: a line without an
// <answer> tag is the answer itself; a think-mode answer without <think>
// gets an empty thought, as the model's response starts inside <think>.
func forgiving(line string, think bool) string {
	lower := strings.ToLower(line)
	if !strings.Contains(lower, "<answer>") {
		if think {
			return "<think></think><answer>" + line + "</answer>"
		}
		return "<answer>" + line + "</answer>"
	}
	if think && !strings.Contains(lower, "<think>") {
		if strings.Contains(lower, "</think>") {
			return envs.ResponsePrefix(true) + line
		}
		return "<think></think>" + line
	}
	return line
}

// optionValues parses -opt key=value flags with the kinds of spec's options.
func optionValues(spec envs.Spec, opts []string) (map[string]any, error) {
	values := map[string]any{}
	for _, kv := range opts {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("-opt %q: want key=value", kv)
		}
		var o *envs.Option
		for i := range spec.Options {
			if spec.Options[i].Name == k {
				o = &spec.Options[i]
			}
		}
		if o == nil {
			values[k] = v // New reports the unknown option with the valid ones
			continue
		}
		x, err := envs.ParseOptionValue(*o, v)
		if err != nil {
			return nil, fmt.Errorf("%s %w", spec.Name, err)
		}
		values[k] = x
	}
	return values, nil
}

func listEnvs(out io.Writer) {
	for _, name := range envs.Names() {
		spec, _ := envs.Lookup(name)
		fmt.Fprintf(out, "%s: %s\n", name, spec.Summary)
		for _, o := range spec.Options {
			def := fmt.Sprint(o.Default)
			if o.Kind == envs.String {
				def = fmt.Sprintf("%q", o.Default)
			}
			fmt.Fprintf(out, "  -opt %s=%s  (%v) %s\n", o.Name, def, o.Kind, o.Doc)
		}
	}
}
