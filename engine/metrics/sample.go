package metrics

// Sample is one episode kept for reading after the run.
//
// Validation samples are the first episodes of every validation, on the
// same held-out initial states each time, so a reader can put the answers
// of step 10 and step 100 to one game side by side (did the reasoning turn
// into a template?). A training sample is one kept trajectory of a step,
// with the per-token quantities its update used: credit assignment made
// visible.
type Sample struct {
	Step    int     `json:"step"`
	Split   string  `json:"split"` // SplitTrain or SplitVal
	Seed    int64   `json:"seed"`  // the environment's reset seed
	Reward  float64 `json:"reward"`
	Success bool    `json:"success"`
	// Text is the whole conversation as the policy saw it.
	Text  string       `json:"text"`
	Turns []SampleTurn `json:"turns"`
	// Tokens are the agent's tokens with their update quantities (training
	// samples only).
	Tokens []SampleToken `json:"tokens,omitempty"`
}

// The two kinds of Sample.
const (
	SplitTrain = "train"
	SplitVal   = "val"
)

// SampleTurn is one turn: the response and what it earned.
type SampleTurn struct {
	Response string   `json:"response"`
	Actions  []string `json:"actions"` // the actions that ran
	Reward   float64  `json:"reward"`  // environment reward plus format penalty
}

// SampleToken is one token the agent sampled, aligned as the update sees
// it: Value is the critic's estimate of the state before the token, Reward
// what the token received (the trajectory or turn reward on its last
// token), Advantage and Return what the estimator made of them. Value and
// Return are 0 for estimators without a critic (GRPO, RLOO, REINFORCE).
type SampleToken struct {
	Text      string  `json:"text"`
	Turn      int     `json:"turn"` // 0-based
	Reward    float64 `json:"reward"`
	Value     float64 `json:"value"`
	Advantage float64 `json:"advantage"`
	Return    float64 `json:"return"`
}

// SamplesAt returns the samples of a split at one step, in order.
func (h *History) SamplesAt(split string, step int) []Sample {
	var out []Sample
	for _, s := range h.Samples {
		if s.Split == split && s.Step == step {
			out = append(out, s)
		}
	}
	return out
}
