package hf

import (
	_ "embed"

	"github.com/ragen-go/ragen/engine/model"
)

// qwen05BConfig is Qwen2.5-0.5B-Instruct's config.json as published.
//
//go:embed testdata/qwen2.5-0.5b-instruct.config.json
var qwen05BConfig []byte

// Qwen05BConfig is the model of Qwen2.5-0.5B(-Instruct), RAGEN's smallest
// policy, parsed from its config.json: hidden 896, 24 layers, 14 query
// heads sharing 2 key/value heads, MLP 4864, vocabulary 151,936, tied
// embeddings, q/k/v biases, RoPE theta 1e6 (494M parameters). Benchmarks
// build a model of this shape with random weights (no download).
func Qwen05BConfig() model.Config {
	c, err := ParseConfig(qwen05BConfig)
	if err != nil {
		panic("hf: the embedded Qwen2.5-0.5B config does not parse: " + err.Error())
	}
	return c
}
