// Command randomhf writes a Hugging Face model directory with random
// weights in the shape of a config.json — by default Qwen2.5-0.5B-Instruct's
// (engine/hf/testdata), stored as BF16 as Qwen2.5's checkpoints are, with
// Qwen2.5's chat template and a small tokenizer of ours
// (engine/tokenizer/testdata/env512.tokenizer.json) — so that the real
// loading and training path (ragen train -pretrained DIR) can be measured
// where the real weights cannot be downloaded:
//
//	go run ./scripts/randomhf /tmp/qwen05b
//	go run ./cmd/ragen train -env bandit -pretrained /tmp/qwen05b -lora-rank 16 ...
//
// Flags: -config, -tokenizer, -f32 (F32 instead of BF16), -seed. Run from the
// repository root. It needs the model's float32 size in memory (2 GB).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ragen-go/ragen/engine/checkpoint"
	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/tokenizer"
)

func main() {
	config := flag.String("config", "engine/hf/testdata/qwen2.5-0.5b-instruct.config.json", "config.json giving the shape")
	tokPath := flag.String("tokenizer", "engine/tokenizer/testdata/env512.tokenizer.json", "tokenizer.json to ship")
	f32 := flag.Bool("f32", false, "store the weights as F32 (default BF16)")
	seed := flag.Uint64("seed", 1, "seed of the random weights")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: randomhf [flags] DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := write(flag.Arg(0), *config, *tokPath, *f32, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "randomhf:", err)
		os.Exit(1)
	}
}

func write(dir, config, tokPath string, f32 bool, seed uint64) error {
	data, err := os.ReadFile(config)
	if err != nil {
		return err
	}
	c, err := hf.ParseConfig(data)
	if err != nil {
		return err
	}
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		return err
	}
	src, err := os.ReadFile("engine/hf/testdata/qwen2.5_chat_template.jinja")
	if err != nil {
		return fmt.Errorf("%w (run from the repository root)", err)
	}
	tmpl, err := hf.ParseChatTemplate(string(src))
	if err != nil {
		return err
	}
	m, err := model.New(c, seed)
	if err != nil {
		return err
	}
	if err := hf.Save(dir, m, tok, tmpl); err != nil {
		return err
	}
	if !f32 { // the same values rounded to bf16, as a BF16 checkpoint
		tensors, err := m.Tensors()
		if err != nil {
			return err
		}
		if err := checkpoint.WriteSafetensorsBF16(filepath.Join(dir, hf.WeightsFile), tensors, nil); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %s: %d parameters (%s), tokenizer %s (%d ids)\n", dir, m.NumParams(), map[bool]string{true: "F32", false: "BF16"}[f32], filepath.Base(tokPath), tok.VocabSize())
	return nil
}
