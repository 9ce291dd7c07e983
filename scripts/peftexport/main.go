// Command peftexport writes what scripts/peft-check.py checks on the GPU
// machine (which has transformers and peft): a tiny random Qwen2 as a
// Hugging Face directory (base/), LoRA adapters on every linear layer of
// it as a PEFT adapter directory (adapter/, model.Model.SaveAdapter), the
// adapted model merged as a Hugging Face directory (merged/, hf.Save), and
// the logits ragen computes with the adapters for a prompt
// (expected.json). scripts/gpu-check build runs it:
//
//	go run ./scripts/peftexport DIR
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/model"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: peftexport DIR")
		os.Exit(2)
	}
	if err := export(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "peftexport:", err)
		os.Exit(1)
	}
}

func export(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base, tok, tmpl, err := hf.Load("engine/hf/testdata/qwen2_untied_f32", hf.Options{})
	if err != nil {
		return err
	}
	a, err := base.WithLoRA(model.LoRA{Rank: 4, Alpha: 8, Targets: []string{"all-linear"}}, false, 1)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range a.Params.Data { // B starts at zero: make the adapters matter
		a.Params.Data[i] += float32(rng.NormFloat64() * 0.05)
	}
	if err := a.Upload(); err != nil {
		return err
	}
	if err := hf.Save(filepath.Join(dir, "base"), base, tok, tmpl); err != nil {
		return err
	}
	if err := a.SaveAdapter(filepath.Join(dir, "adapter")); err != nil {
		return err
	}
	if err := hf.Save(filepath.Join(dir, "merged"), a, tok, tmpl); err != nil {
		return err
	}
	toks := tok.Encode("<|im_start|>user\nPush the box to the goal.<|im_end|>\n<|im_start|>assistant\n")
	out, err := a.Forward(toks, []int{len(toks)}, model.Want{Logits: true})
	if err != nil {
		return err
	}
	data, err := json.Marshal(map[string]any{"tokens": toks, "vocab_size": a.Config.VocabSize, "logits": out.Logits})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "expected.json"), data, 0o644)
}
