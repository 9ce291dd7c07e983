package webshop

import "github.com/ragen-go/ragen/envs"

// Name is the registry name.
const Name = "webshop"

// Config sets up WebShop-lite. Start from DefaultConfig.
type Config struct {
	// Products in the catalogue. Default 1000 (WebShop's "small" set), in
	// [20, 20000].
	Products int
	// CatalogSeed generates the catalogue; episodes draw their goals from
	// Reset's seed. Default 0.
	CatalogSeed int64
	// MaxSteps ends the episode, unbought and with reward 0, after this
	// many valid actions. Default 15.
	MaxSteps int
	// BinaryReward pays 1 for a perfect purchase and 0 otherwise (RAGEN v2)
	// instead of WebShop's score in [0, 1] (RAGEN v1). Default false.
	BinaryReward bool
	// MaxActionsPerTurn: actions per answer. Default 1 (RAGEN).
	MaxActionsPerTurn int
	// MaxActionsPerEpisode: the episode's action budget. Default 9 (RAGEN).
	MaxActionsPerEpisode int
	// MaxTurns: agent turns per episode. Default 9 (RAGEN).
	MaxTurns int
}

// DefaultConfig returns RAGEN's WebShop settings on a 1000-product catalogue.
func DefaultConfig() Config {
	return Config{Products: 1000, MaxSteps: 15, MaxActionsPerTurn: 1, MaxActionsPerEpisode: 9, MaxTurns: 9}
}

// Validate reports the first invalid field, naming it.
func (c Config) Validate() error {
	switch {
	case c.Products < 20 || c.Products > 20000:
		return envs.OptionError(Name, "products", "must be in [20, 20000] (got %d)", c.Products)
	case c.MaxSteps < 1:
		return envs.OptionError(Name, "max_steps", "must be >= 1 (got %d)", c.MaxSteps)
	case c.MaxActionsPerTurn < 1:
		return envs.OptionError(Name, envs.OptMaxActionsPerTurn, "must be >= 1 (got %d)", c.MaxActionsPerTurn)
	case c.MaxActionsPerEpisode < 1:
		return envs.OptionError(Name, envs.OptMaxActionsPerEpisode, "must be >= 1 (got %d)", c.MaxActionsPerEpisode)
	case c.MaxTurns < 1:
		return envs.OptionError(Name, envs.OptMaxTurns, "must be >= 1 (got %d)", c.MaxTurns)
	}
	return nil
}

func init() {
	d := DefaultConfig()
	envs.Register(envs.Spec{
		Name:    Name,
		Summary: "shop in a synthetic catalogue with search[...] and click[...] to buy what an instruction asks; WebShop's reward",
		Options: append([]envs.Option{
			{Name: "products", Kind: envs.Int, Default: d.Products, Doc: "products in the generated catalogue, in [20, 20000]"},
			{Name: "catalog_seed", Kind: envs.Int, Default: int(d.CatalogSeed), Doc: "seed of the catalogue (goals come from the episode seed)"},
			{Name: "max_steps", Kind: envs.Int, Default: d.MaxSteps, Doc: "valid actions after which the episode ends unbought"},
			{Name: "binary_reward", Kind: envs.Bool, Default: d.BinaryReward, Doc: "reward 1 only for a perfect purchase, else 0 (RAGEN v2); default WebShop's score in [0, 1]"},
		}, envs.BudgetOptions(d.MaxActionsPerTurn, d.MaxActionsPerEpisode, d.MaxTurns)...),
		New: func(o envs.Options) (envs.Env, error) {
			e, err := New(Config{
				Products: o.Int("products"), CatalogSeed: int64(o.Int("catalog_seed")), MaxSteps: o.Int("max_steps"),
				BinaryReward:         o.Bool("binary_reward"),
				MaxActionsPerTurn:    o.Int(envs.OptMaxActionsPerTurn),
				MaxActionsPerEpisode: o.Int(envs.OptMaxActionsPerEpisode),
				MaxTurns:             o.Int(envs.OptMaxTurns),
			})
			if err != nil {
				return nil, err // not a typed nil inside the interface
			}
			return e, nil
		},
	})
}
