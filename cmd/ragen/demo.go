package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/rollout"
	"github.com/ragen-go/ragen/engine/sample"
	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/envs"
	_ "github.com/ragen-go/ragen/envs/all"
)

func init() {
	register("demo", "train a tiny language model on game transcripts and sample from it", runDemo)
}

// runDemo is the engine in one screen: a byte-level BPE vocabulary and a
// small transformer trained from scratch on Sokoban expert transcripts by
// next-token prediction, the loss printed as it falls, then a sampled
// continuation of a prompt.
func runDemo(args []string) error {
	fs := flag.NewFlagSet("ragen demo", flag.ContinueOnError)
	steps := fs.Int("steps", 300, "training steps")
	preset := fs.String("model", "small", "model preset: tiny | small | base")
	seed := fs.Int64("seed", 1, "seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	// The corpus: expert Sokoban games as chat transcripts.
	env, err := envs.New("sokoban", nil)
	if err != nil {
		return err
	}
	demos, err := envs.Demonstrations(env, envs.DemoConfig{Episodes: 200, Seed: *seed, ImperfectRate: 0.2,
		Turn: envs.DefaultTurnConfig(), Prompt: envs.DefaultPromptConfig()})
	if err != nil {
		return err
	}
	var corpus []string
	for _, d := range demos {
		text, err := rollout.DemoText(d, true)
		if err != nil {
			return err
		}
		corpus = append(corpus, text)
	}
	tok, err := tokenizer.Train(corpus, tokenizer.TrainConfig{VocabSize: 512})
	if err != nil {
		return err
	}
	cfg, err := model.Preset(*preset)
	if err != nil {
		return err
	}
	cfg.VocabSize, cfg.MaxPositions = tok.VocabSize(), 1024
	m, err := model.New(cfg, uint64(*seed))
	if err != nil {
		return err
	}
	fmt.Printf("corpus: %d games; vocabulary %d tokens; model %s, %.2fM parameters\n",
		len(corpus), tok.VocabSize(), *preset, float64(m.NumParams())/1e6)

	// Windows of 128 tokens cut from the tokenized corpus, 16 per step.
	var stream []int
	for _, s := range corpus {
		stream = append(stream, tok.Encode(s)...)
		stream = append(stream, tokenizer.EndOfTextID)
	}
	const T, B = 128, 16
	oc := optim.DefaultConfig()
	oc.LR, oc.Schedule, oc.WarmupSteps, oc.TotalSteps = 3e-3, "cosine", 20, *steps
	opt, err := m.NewAdamW(oc)
	if err != nil {
		return err
	}
	rng := sample.NewRNG(uint64(*seed))
	start := time.Now()
	tokens, lens := make([]int, 0, B*T), make([]int, B)
	for step := 1; step <= *steps && ctx.Err() == nil; step++ {
		tokens = tokens[:0]
		for b := range lens {
			o := int(rng.Uint64() % uint64(len(stream)-T))
			tokens = append(tokens, stream[o:o+T]...)
			lens[b] = T
		}
		m.ZeroGrad()
		loss, err := m.CrossEntropy(tokens, lens, nil)
		if err != nil {
			return err
		}
		if _, err := m.ClipGradNorm(1); err != nil {
			return err
		}
		if _, err := m.Step(opt); err != nil {
			return err
		}
		if step == 1 || step%20 == 0 || step == *steps {
			el := time.Since(start).Seconds()
			fmt.Printf("step %4d  loss %.3f  (%.0f tokens/s)\n", step, loss, float64(step*B*T)/el)
		}
	}

	// Sample an answer to a fresh game's first prompt.
	ep, err := envs.Start(env, *seed+10_000, envs.DefaultTurnConfig())
	if err != nil {
		return err
	}
	prompt := rollout.FirstText(ep.Desc, ep.Observation, ep.ActionsLeft, true)
	dec, err := m.NewDecoder()
	if err != nil {
		return err
	}
	ids := tok.Encode(prompt)
	out, err := dec.Generate([]model.Request{{ID: 0, Prompt: ids, RNG: sample.NewRNG(uint64(*seed))}},
		model.GenerateOptions{Sample: sample.Options{Temperature: 0.7}, MaxNew: 80,
			Stop: sample.NewStopper([][]int{{tokenizer.AnswerEndID}})})
	if err != nil {
		return err
	}
	text, err := tok.Decode(out[0])
	if err != nil {
		return err
	}
	fmt.Printf("\nstate:\n%s\n\nsampled response:\n%s%s\n", ep.Observation, envs.ResponsePrefix(true), text)
	return nil
}
