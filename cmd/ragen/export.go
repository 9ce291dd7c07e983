package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/tokenizer"
)

func init() {
	register("export", "write a trained policy as a Hugging Face directory (LoRA adapters merged) for transformers or vLLM", func(args []string) error {
		return export(args, os.Stdout)
	})
}

const exportUsage = `usage: ragen export -base DIR -adapter ADAPTER OUT
       ragen export -checkpoint CKPT OUT

Writes a trained policy to OUT as a Hugging Face model directory
(config.json, model.safetensors in F32, tokenizer, chat template) that
transformers and vLLM load without PEFT:

  -base and -adapter: a LoRA run's policy, its adapters (a PEFT directory:
      runs/x/checkpoints/step-N/policy-adapter, or PEFT's save_pretrained)
      merged into the pretrained base they were trained on (the run's
      -pretrained directory), W + (alpha/r)·B·A; tokenizer and chat
      template are the base's;
  -checkpoint: a fully fine-tuned policy of ours (runs/x/checkpoints/step-N,
      its policy/, or a model.Save directory), with its tokenizer and our
      ChatML template.

The adapter directory itself is already what peft.PeftModel.from_pretrained
loads onto the base.

flags:
`

func export(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ragen export", flag.ContinueOnError)
	fs.SetOutput(out)
	base := fs.String("base", "", "the Hugging Face directory the adapters were trained on (with -adapter)")
	adapter := fs.String("adapter", "", "a PEFT LoRA adapter directory (with -base)")
	ckpt := fs.String("checkpoint", "", "a checkpoint of ours: runs/x/checkpoints/step-N or a model.Save directory")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), exportUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("give the output directory: ragen export [flags] OUT (see ragen export -h)")
	}
	dir := fs.Arg(0)
	var (
		policy *model.Model
		tok    *tokenizer.Tokenizer
		tmpl   *hf.ChatTemplate
	)
	switch {
	case *ckpt != "" && (*base != "" || *adapter != ""):
		return errors.New("-checkpoint exports a fully trained policy, -base with -adapter a LoRA one: give one of the two")
	case *ckpt != "":
		pdir := *ckpt
		if _, err := os.Stat(filepath.Join(pdir, "policy", hf.ConfigFile)); err == nil {
			pdir = filepath.Join(pdir, "policy")
		}
		m, d, err := model.Load(pdir)
		if err != nil {
			return err
		}
		defer d.Close()
		if m.LoRA() != nil || !m.Config.LMHead {
			return fmt.Errorf("%s is no full policy (adapters or a critic): export a LoRA run with -base and -adapter", pdir)
		}
		if tok, err = tokenizer.FromJSON(d.Tokenizer); err != nil {
			return fmt.Errorf("%s: tokenizer.json: %w", pdir, err)
		}
		policy = m
	case *base == "" || *adapter == "":
		return errors.New("give -base and -adapter (a LoRA run), or -checkpoint (a full fine-tune)")
	default:
		// The base only serves the merge: loaded frozen, a bf16
		// checkpoint's matrices stay bf16 until Merged widens them.
		b, t, tm, err := hf.Load(*base, hf.Options{Frozen: true})
		if err != nil {
			return err
		}
		if policy, err = b.LoadAdapter(*adapter); err != nil {
			return err
		}
		tok, tmpl = t, tm
	}
	if err := hf.Save(dir, policy, tok, tmpl); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s\n", dir)
	return nil
}
