package train

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/tokenizer"
)

// TestQwen05BPretrainedStep trains a policy of Qwen2.5-0.5B-Instruct's
// shape (hidden 896, 24 layers, 14 heads sharing 2 key/value heads, MLP
// 4864, vocabulary 151936, tied; 494M parameters) with random weights,
// loaded through Config.Pretrained like a real checkpoint, with Qwen2.5's
// chat template: rollouts of 2 groups × 2 on the bandit, 32 tokens per
// turn, then one StarPO step. It logs the load time, tokens/s, the step's
// phases and the peak resident memory (getrusage maxrss).
//
// The tokenizer is Qwen's if RAGEN_QWEN_TOKENIZER names its tokenizer.json
// (scripts/qwen-parity fetches it), else a 512-token vocabulary of ours
// in the 151936-row embedding. Advantages are GRPO's by default, so that
// the run needs about 9 GB (parameters, gradients and two AdamW moments of
// 2 GB each); RAGEN_BIG_CRITIC=1 adds the critic (GAE), about 17 GB. Minutes
// on 2 cores, so it runs only when asked:
//
//	RAGEN_BIG=1 go test ./engine/train -run Qwen05B -v -timeout 60m
func TestQwen05BPretrainedStep(t *testing.T) {
	if testing.Short() || os.Getenv("RAGEN_BIG") != "1" {
		t.Skip("set RAGEN_BIG=1 to run the 0.5B model (minutes, 9 GB)")
	}
	data, err := os.ReadFile("../hf/testdata/qwen2.5-0.5b-instruct.config.json")
	if err != nil {
		t.Fatal(err)
	}
	mc, err := hf.ParseConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	tokPath := os.Getenv("RAGEN_QWEN_TOKENIZER")
	if tokPath == "" {
		tokPath = "../tokenizer/testdata/env512.tokenizer.json"
	}
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../hf/testdata/qwen2.5_chat_template.jinja")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := hf.ParseChatTemplate(string(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "qwen05b")
	start := time.Now()
	{
		m, err := model.New(mc, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := hf.Save(dir, m, tok, tmpl); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote a random %s-shaped checkpoint (tokenizer %s, %d ids) in %.1f s", "Qwen2.5-0.5B", filepath.Base(tokPath), tok.VocabSize(), time.Since(start).Seconds())
	runtime.GC()
	debug.FreeOSMemory()

	c := Default()
	c.Env, c.Pretrained = "bandit", dir
	c.EnvGroups, c.GroupSize, c.MaxTokensPerTurn = 2, 2, 32
	c.Steps, c.ValEpisodes, c.WarmStart.Steps = 1, 0, 0
	c.Algo.FilterRatio = 1 // keep both groups: the step learns from all 4 trajectories
	if os.Getenv("RAGEN_BIG_CRITIC") != "1" {
		c.Algo.AdvEstimator = algo.EstGRPO
	}
	start = time.Now()
	tr, err := New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	load := time.Since(start).Seconds()
	if tr.Template == nil || tr.Template.DefaultSystem == "" || policyOf(t, tr).NumParams() < 490e6 {
		t.Fatalf("the loaded policy: template %+v, %d parameters", tr.Template, policyOf(t, tr).NumParams())
	}
	s, err := tr.Step(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v := s.Values
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t.Logf("estimator %s, critic %v, GOMAXPROCS %d", c.Algo.AdvEstimator, tr.critic != nil, runtime.GOMAXPROCS(0))
	t.Logf("load (hf.Load + optimizer + critic): %.1f s", load)
	t.Logf("rollout: %.1f s, %.1f response tokens per trajectory, %.2f sampled tokens/s", v[metrics.TimeRollout], v[metrics.ResponseTokens], v[metrics.TokensPerSec])
	t.Logf("train (old log-probs excluded): %.1f s; whole step %.1f s", v[metrics.TimeTrain], v[metrics.TimeStep])
	t.Logf("peak resident memory (maxrss): %.2f GB", float64(ru.Maxrss)/(1<<20))
	for _, name := range []string{metrics.GradNorm, metrics.Entropy} {
		if _, ok := v[name]; !ok {
			t.Errorf("the step reported no %s: no update ran", name)
		}
	}
}
