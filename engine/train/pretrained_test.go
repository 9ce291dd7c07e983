package train

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/hf"
)

const qwenSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

// A run starts from a Hugging Face directory (Pretrained: weights,
// tokenizer and chat template from it) or from one of our checkpoints
// (Init), instead of the warm start.
func TestPretrainedAndInit(t *testing.T) {
	base := tinyConfig(t)
	base.Steps, base.ValEpisodes = 1, 0
	base.RunDir = t.TempDir()
	first := run(t, base)
	hfDir := filepath.Join(t.TempDir(), "hf")
	tmpl, err := hf.ParseChatTemplate(hf.ChatMLTemplate(qwenSystem))
	if err != nil {
		t.Fatal(err)
	}
	if err := hf.Save(hfDir, policyOf(t, first), first.Tok, tmpl); err != nil {
		t.Fatal(err)
	}

	c := base
	c.RunDir, c.Pretrained, c.WarmStart.Steps = "", hfDir, 0
	c.Model = "base" // ignored: the checkpoint's sizes hold
	tr, err := New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Template == nil || tr.Template.DefaultSystem != qwenSystem {
		t.Fatalf("template %+v, want Qwen's default system message", tr.Template)
	}
	if policyOf(t, tr).Config.HiddenSize != policyOf(t, first).Config.HiddenSize || !slices.Equal(policyOf(t, tr).Params.Data, policyOf(t, first).Params.Data) {
		t.Fatal("the pretrained policy is not the saved one")
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Fine-tuning a loaded policy on demonstrations changes it.
	c.WarmStart.Steps = 2
	tuned, err := New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(policyOf(t, tuned).Params.Data, policyOf(t, first).Params.Data) {
		t.Fatal("WarmStart.Steps > 0 did not fine-tune the pretrained policy")
	}

	c = base
	c.RunDir, c.Init, c.WarmStart.Steps = "", lastCheckpoint(t, first), 0
	tr, err = New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Template != nil || !slices.Equal(policyOf(t, tr).Params.Data, policyOf(t, first).Params.Data) || tr.Tok.VocabSize() != first.Tok.VocabSize() {
		t.Fatal("Init did not load the checkpoint's policy and tokenizer")
	}

	for _, bad := range []struct {
		pretrained, init, want string
	}{
		{hfDir, hfDir, "init: cannot be combined with pretrained"},
		{t.TempDir(), "", "pretrained: "},
		{"", t.TempDir(), "init: "},
	} {
		c := base
		c.Pretrained, c.Init = bad.pretrained, bad.init
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("pretrained %q init %q: error %v, want %q…", bad.pretrained, bad.init, err, bad.want)
		}
	}
}

// lastCheckpoint returns the run's last checkpoint directory.
func lastCheckpoint(tb testing.TB, tr *Trainer) string {
	tb.Helper()
	dirs, _ := filepath.Glob(filepath.Join(tr.cfg.RunDir, "checkpoints", "step-*"))
	if len(dirs) == 0 {
		tb.Fatal("the run wrote no checkpoint")
	}
	return dirs[len(dirs)-1]
}
