package bandit

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"unicode"

	"github.com/ragen-go/ragen/envs"
)

// Name is the registry name.
const Name = "bandit"

// Pair is one (low-risk, high-risk) arm naming.
type Pair struct{ Lo, Hi string }

// TrainPairs and TestPairs are RAGEN's name pairs; the test names never
// appear in training, to check that the agent generalises the meaning of a
// name rather than memorising it.
var (
	TrainPairs = []Pair{
		{"Teacher", "Trader"}, {"Nurse", "StartupFounder"}, {"Librarian", "Investor"},
		{"Accountant", "StockBroker"}, {"Engineer", "RealEstateAgent"}, {"Pharmacist", "Musician"},
		{"Clerk", "Freelancer"}, {"Technician", "Youtuber"}, {"Planner", "Artist"},
		{"Postman", "Pilot"}, {"Banker", "VentureCapitalist"}, {"Gardener", "Cryptominer"},
	}
	TestPairs = []Pair{
		{"Receptionist", "Explorer"}, {"Archivist", "Filmmaker"}, {"Bookkeeper", "Consultant"},
		{"SocialWorker", "Photographer"}, {"Mechanic", "GameDesigner"}, {"Secretary", "Entrepreneur"},
		{"Cashier", "DataScientist"}, {"CivilServant", "StartupAccelerator"},
	}
)

// Config sets the bandit's pay-outs. The defaults are RAGEN's.
type Config struct {
	Split    string  // "train" or "test": which name pairs to draw from (default "train")
	LoReward float64 // the low-risk arm's fixed reward (default 0.1)
	HiReward float64 // the high-risk arm's reward on a win (default 1)
	HiMiss   float64 // the high-risk arm's reward otherwise (default 0)
	HiProb   float64 // the high-risk arm's win probability (default 0.25)
	LoName   string  // with HiName: always these arm names instead of drawing (default "": draw)
	HiName   string
}

// DefaultConfig returns RAGEN's bandit.
func DefaultConfig() Config {
	return Config{Split: "train", LoReward: 0.1, HiReward: 1, HiMiss: 0, HiProb: 0.25}
}

// Validate reports the first impossible field.
func (c Config) Validate() error {
	if c.Split != "train" && c.Split != "test" {
		return envs.OptionError(Name, "split", `must be "train" or "test" (got %q)`, c.Split)
	}
	if !(c.HiProb >= 0 && c.HiProb <= 1) {
		return envs.OptionError(Name, "hi_prob", "is a probability, must be in [0, 1] (got %v)", c.HiProb)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"lo_reward", c.LoReward}, {"hi_reward", c.HiReward}, {"hi_miss", c.HiMiss}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return envs.OptionError(Name, f.name, "must be a finite number (got %v)", f.v)
		}
	}
	if (c.LoName == "") != (c.HiName == "") {
		return fmt.Errorf("%s: options lo_name and hi_name go together (got %q, %q)", Name, c.LoName, c.HiName)
	}
	if c.LoName != "" && (strings.EqualFold(c.LoName, c.HiName) || !oneWord(c.LoName) || !oneWord(c.HiName)) {
		return fmt.Errorf("%s: lo_name and hi_name must be two different words of letters and digits (got %q, %q)", Name, c.LoName, c.HiName)
	}
	return nil
}

func init() {
	d := DefaultConfig()
	envs.Register(envs.Spec{
		Name:    Name,
		Summary: "two-armed bandit with semantic arm names: a safe arm (0.1) and a risky one (1 w.p. 0.25); one turn",
		Options: []envs.Option{
			{Name: "split", Kind: envs.String, Default: d.Split, Choices: []string{"train", "test"}, Doc: "name pairs to draw arm names from"},
			{Name: "lo_reward", Kind: envs.Float, Default: d.LoReward, Doc: "the low-risk arm's fixed reward"},
			{Name: "hi_reward", Kind: envs.Float, Default: d.HiReward, Doc: "the high-risk arm's reward when it pays"},
			{Name: "hi_miss", Kind: envs.Float, Default: d.HiMiss, Doc: "the high-risk arm's reward when it does not pay"},
			{Name: "hi_prob", Kind: envs.Float, Default: d.HiProb, Doc: "probability that the high-risk arm pays, in [0, 1]"},
			{Name: "lo_name", Kind: envs.String, Default: "", Doc: "fixed name of the low-risk arm (with hi_name; default: drawn from split)"},
			{Name: "hi_name", Kind: envs.String, Default: "", Doc: "fixed name of the high-risk arm (with lo_name)"},
		},
		New: func(o envs.Options) (envs.Env, error) {
			return New(Config{Split: o.String("split"), LoReward: o.Float("lo_reward"),
				HiReward: o.Float("hi_reward"), HiMiss: o.Float("hi_miss"), HiProb: o.Float("hi_prob"),
				LoName: o.String("lo_name"), HiName: o.String("hi_name")})
		},
	})
}

// Env is one bandit.
type Env struct {
	cfg     Config
	rng     *rand.Rand
	names   Pair
	loFirst bool   // the low-risk arm is shown first
	pulled  string // the arm pulled, "" before the step
	reward  float64
}

// New returns a bandit reset with seed 0.
func New(c Config) (*Env, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	e := &Env{cfg: c}
	e.Reset(0)
	return e, nil
}

// Arms returns the arm names in the order shown.
func (e *Env) Arms() [2]string {
	if e.loFirst {
		return [2]string{e.names.Lo, e.names.Hi}
	}
	return [2]string{e.names.Hi, e.names.Lo}
}

// Names returns this episode's (low-risk, high-risk) names.
func (e *Env) Names() Pair { return e.names }

// Describe implements envs.Env; the actions are this episode's arm names.
func (e *Env) Describe() envs.Description {
	a := e.Arms()
	return envs.Description{
		Name: Name,
		Instruction: "You are playing a two-armed bandit. You pull one arm, once, and receive its reward. " +
			"Each arm pays according to its own reward distribution, and an arm's name hints at how it pays. " +
			"Reason about what the names suggest, then pull the arm you expect to pay more on average.",
		Actions:              []string{a[0], a[1]},
		MaxActionsPerTurn:    1,
		MaxActionsPerEpisode: 1,
		MaxTurns:             1,
	}
}

// Reset implements envs.Env: it draws the names and their order.
func (e *Env) Reset(seed int64) (string, error) {
	e.rng = envs.NewRand(seed)
	pairs := TrainPairs
	if e.cfg.Split == "test" {
		pairs = TestPairs
	}
	e.names = pairs[e.rng.Intn(len(pairs))]
	if e.cfg.LoName != "" {
		e.names = Pair{e.cfg.LoName, e.cfg.HiName}
	}
	e.loFirst = e.rng.Intn(2) == 0
	e.pulled, e.reward = "", 0
	return e.Render(), nil
}

// Step implements envs.Env: pull the named arm (exact spelling).
func (e *Env) Step(action string) envs.StepResult {
	if e.pulled != "" {
		return envs.StepResult{Observation: e.Render(), Done: true}
	}
	var hi bool
	switch action {
	case e.names.Lo:
	case e.names.Hi:
		hi = true
	default:
		return envs.StepResult{Observation: e.Render()}
	}
	r := e.cfg.LoReward
	if hi {
		r = e.cfg.HiMiss
		if e.rng.Float64() < e.cfg.HiProb {
			r = e.cfg.HiReward
		}
	}
	e.pulled, e.reward = action, r
	m := map[string]float64{"pulled_high_risk": 0}
	if hi {
		m["pulled_high_risk"] = 1
	}
	// RAGEN counts choosing the high-risk arm as success, whatever it paid:
	// it is the choice with the higher expected reward.
	return envs.StepResult{Observation: e.Render(), Reward: r, Done: true,
		Info: envs.Info{Success: hi, Valid: true, Effective: true, Metrics: m}}
}

// Render implements envs.Env.
func (e *Env) Render() string {
	a := e.Arms()
	s := fmt.Sprintf("Arms: %s, %s\nEach arm has its own pay-out, suggested by its name. Pull one: answer %s or %s.",
		a[0], a[1], a[0], a[1])
	if e.pulled != "" {
		s += fmt.Sprintf("\nYou pulled %s and received %s.", e.pulled, envs.FormatReward(e.reward))
	}
	return s
}

func oneWord(s string) bool {
	for _, c := range s {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return s != ""
}
