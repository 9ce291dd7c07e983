package envs

import "fmt"

// Message is one chat message: Role is "system", "user" or "assistant".
type Message struct {
	Role    string
	Content string
}

// DemoConfig sets how Demonstrations plays.
type DemoConfig struct {
	Episodes int   // episodes to play, at least 1
	Seed     int64 // episode i is reset with Seed+i
	// ImperfectRate is the probability, per turn, that the expert gives an
	// imperfect demonstration (suboptimal or random actions), in [0, 1].
	ImperfectRate float64
	Turn          TurnConfig   // how responses are read and scored
	Prompt        PromptConfig // how the user messages are written
}

// Demo is one demonstrated episode as the conversation the policy is
// fine-tuned on.
type Demo struct {
	Seed     int64
	Messages []Message // system, then user and assistant messages in turn
	Return   float64   // the episode's total reward, penalties included
	Success  bool
}

// Demonstrations plays cfg.Episodes episodes of env with its expert and
// returns them as conversations, with the same prompt text the trainer
// shows the policy. Each episode draws its choices (which phrasing, which
// turns are imperfect) from a generator seeded by its own seed, so one
// episode does not depend on how many were played before it.
func Demonstrations(env Env, cfg DemoConfig) ([]Demo, error) {
	x, ok := env.(Expert)
	if !ok {
		return nil, fmt.Errorf("environment %s has no expert to demonstrate with", env.Describe().Name)
	}
	if cfg.Episodes < 1 {
		return nil, fmt.Errorf("demonstrations: episodes must be at least 1 (got %d)", cfg.Episodes)
	}
	if !(cfg.ImperfectRate >= 0 && cfg.ImperfectRate <= 1) {
		return nil, fmt.Errorf("demonstrations: imperfect_rate must be in [0, 1] (got %v)", cfg.ImperfectRate)
	}
	demos := make([]Demo, 0, cfg.Episodes)
	for i := 0; i < cfg.Episodes; i++ {
		seed := cfg.Seed + int64(i)
		ep, err := Start(env, seed, cfg.Turn)
		if err != nil {
			return nil, fmt.Errorf("demonstration episode with seed %d: %w", seed, err)
		}
		// A fixed odd multiplier decorrelates the phrasing stream from the
		// environment's own stream seeded with the same seed.
		rng := NewRand(seed*0x9E3779B1 + 1)
		d := Demo{Seed: seed, Messages: []Message{{"system", SystemMessage}}}
		prev := 0.0
		for !ep.Done {
			d.Messages = append(d.Messages, Message{"user",
				UserMessage(ep.Desc, ep.Turn+1, prev, ep.Observation, ep.ActionsLeft, cfg.Prompt)})
			resp := x.Demonstrate(rng, rng.Float64() < cfg.ImperfectRate)
			if !cfg.Turn.Think { // demonstrations reason; drop it for no-think runs
				resp = Parse(resp, true, nil, 0).Canonical(resp, false)
			}
			d.Messages = append(d.Messages, Message{"assistant", resp})
			r, err := ep.Step(resp)
			if err != nil {
				return nil, err
			}
			prev = r.Reward
		}
		d.Return, d.Success = ep.Return(), ep.Success
		demos = append(demos, d)
	}
	return demos, nil
}
