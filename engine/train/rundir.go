package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ragen-go/ragen/engine/checkpoint"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/internal/atomicfile"
)

// ErrCollapse is wrapped by the error Run returns when the collapse
// monitor stops a run (Monitor.Action stop).
var ErrCollapse = errors.New("collapse detected")

// A run directory holds
//
//	config.json         the full configuration
//	metrics.jsonl       one metrics.Step per line, appended as steps finish
//	                    (step 0: the starting policy's validation)
//	events.jsonl        one metrics.Event per line
//	checkpoints/step-N  policy/, critic/ (and ref/) checkpoint directories
//	                    and trainer.json (the step and history to resume)
//
// Every file is written whole or appended a line at a time; checkpoints are
// built in a temporary directory and renamed into place.

func (t *Trainer) openRunDir() error {
	if t.cfg.RunDir == "" || !t.writer() {
		return nil
	}
	if err := os.MkdirAll(t.cfg.RunDir, 0o755); err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	b, err := json.MarshalIndent(t.cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("run directory: config: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(t.cfg.RunDir, "config.json"), append(b, '\n'))
}

func (t *Trainer) appendJSONL(name string, v any) {
	if t.cfg.RunDir == "" || !t.writer() {
		return
	}
	b, err := json.Marshal(v)
	if err == nil {
		var f *os.File
		f, err = os.OpenFile(filepath.Join(t.cfg.RunDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			_, err = f.Write(append(b, '\n'))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ragen: cannot write %s: %v\n", name, err)
	}
}

func (t *Trainer) writeEvent(e metrics.Event) { t.appendJSONL("events.jsonl", e) }

// afterStep logs the step, runs the collapse monitor and keeps the best
// weights (for rewind) and the periodic checkpoint. A non-nil error ends Run.
func (t *Trainer) afterStep(s metrics.Step) error {
	t.appendJSONL("metrics.jsonl", s)
	if err := t.best.consider(t, s); err != nil {
		return err
	}
	for _, e := range t.monitor.Observe(s) {
		t.emit(e)
		switch t.cfg.Monitor.Action {
		case MonitorStop:
			return fmt.Errorf("step %d: %w: %s", s.Step, ErrCollapse, e.Message)
		case MonitorRewind:
			if t.best.step > 0 {
				if err := t.best.restore(t); err != nil {
					return err
				}
				t.emit(metrics.Event{Step: s.Step, Kind: "rewind",
					Message: fmt.Sprintf("restored the weights of step %d (the best so far)", t.best.step)})
			}
		}
	}
	if t.cfg.CheckpointEvery > 0 && s.Step%t.cfg.CheckpointEvery == 0 {
		return t.Checkpoint()
	}
	return nil
}

// finishRun saves the last checkpoint unless the periodic one just did, or
// no step was trained (an evaluation, Steps 0: nothing new to save).
func (t *Trainer) finishRun() error {
	if t.cfg.RunDir != "" && t.step > 0 && t.saved != t.step {
		return t.Checkpoint()
	}
	return nil
}

// savedRef is the reference policy a checkpoint holds: none when it is
// the adapters' frozen base, which the run rebuilds as it started.
func (t *Trainer) savedRef() *model.Model {
	if t.ref == t.policy.Base() {
		return nil
	}
	return t.ref
}

// trainerState is what a checkpoint adds to the models to resume a run.
type trainerState struct {
	Step    int             `json:"step"`
	History metrics.History `json:"history"`
}

// Checkpoint saves the policy, critic and reference with their optimizer
// state and the history into RunDir/checkpoints/step-N, atomically.
func (t *Trainer) Checkpoint() error {
	if t.cfg.RunDir == "" {
		return errors.New("checkpoint: the run has no run directory")
	}
	if !t.writer() {
		return nil // rank 0 saves the state every rank holds
	}
	t.obs.Phase(t.step, "checkpoint")
	dir := filepath.Join(t.cfg.RunDir, "checkpoints", fmt.Sprintf("step-%06d", t.step))
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil { // checkpoint.SaveDir needs the parent
		return fmt.Errorf("checkpoint: %w", err)
	}
	tj, err := t.Tok.MarshalJSON()
	if err != nil {
		return err
	}
	save := func(name string, m *model.Model, opt *optim.AdamW) error {
		if m == nil {
			return nil
		}
		var extra checkpoint.Checkpoint
		if opt != nil {
			var err error
			if extra.Optimizer, extra.OptimizerMeta, err = opt.StateTensors(); err != nil {
				return fmt.Errorf("checkpoint: %s: %w", name, err)
			}
		}
		if err := m.Save(filepath.Join(tmp, name), tj, extra); err != nil {
			return fmt.Errorf("checkpoint: %s: %w", name, err)
		}
		return nil
	}
	if err := save("policy", t.policy, t.actorOpt); err != nil {
		return err
	}
	if err := save("critic", t.critic, t.criticOpt); err != nil {
		return err
	}
	if err := save("ref", t.savedRef(), nil); err != nil {
		return err
	}
	if t.policy.LoRA() != nil { // also as PEFT reads it
		if err := t.policy.SaveAdapter(filepath.Join(tmp, "policy-adapter")); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	st, err := json.Marshal(trainerState{Step: t.step, History: t.History})
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(tmp, "trainer.json"), st); err != nil {
		return err
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	t.saved = t.step
	return nil
}

// Resume loads the checkpoint directory written by Checkpoint into a
// trainer built with the same configuration, so that the next steps give
// the same metrics as an uninterrupted run.
func (t *Trainer) Resume(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "trainer.json"))
	if err != nil {
		return fmt.Errorf("cannot resume from %s: %w", dir, err)
	}
	var st trainerState
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("cannot resume from %s: trainer.json: %w", dir, err)
	}
	if st.Step >= t.cfg.Steps {
		return fmt.Errorf("cannot resume from %s: it is at step %d and this run has %d steps, so nothing is left to train (raise steps; to evaluate the checkpoint, start from its policy with steps 0)", dir, st.Step, t.cfg.Steps)
	}
	load := func(name string, m *model.Model, opt *optim.AdamW) error {
		if m == nil {
			return nil
		}
		d, err := m.Restore(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("cannot resume: %s: %w", name, err)
		}
		defer d.Close()
		if opt != nil {
			if d.Optimizer == nil {
				return fmt.Errorf("cannot resume from %s: %s has no optimizer state", dir, name)
			}
			return opt.LoadState(d.Optimizer)
		}
		return nil
	}
	if err := load("policy", t.policy, t.actorOpt); err != nil {
		return err
	}
	if err := load("critic", t.critic, t.criticOpt); err != nil {
		return err
	}
	if err := load("ref", t.savedRef(), nil); err != nil {
		return err
	}
	t.step, t.History, t.reused = st.Step, st.History, nil
	t.monitor = NewMonitor(t.cfg.Monitor)
	for _, s := range t.History.Steps[1:] {
		t.monitor.Observe(s)
	}
	return nil
}

// bestCheckpoint keeps in memory the weights of the best step so far (by
// validation success, else training reward), for the monitor's rewind.
type bestCheckpoint struct {
	step          int
	score         float64
	policy, value []float32
}

func (b *bestCheckpoint) consider(t *Trainer, s metrics.Step) error {
	if t.cfg.Monitor.Action != MonitorRewind {
		return nil
	}
	score, ok := s.Values[metrics.ValSuccessRate]
	if !ok {
		score, ok = s.Values[metrics.RewardMean]
	}
	if !ok || (b.step > 0 && score <= b.score) {
		return nil
	}
	b.step, b.score = s.Step, score
	if err := t.policy.SyncParams(); err != nil {
		return fmt.Errorf("step %d: keeping the best weights: %w", s.Step, err)
	}
	b.policy = append(b.policy[:0], t.policy.Params.Data...)
	if t.critic != nil {
		if err := t.critic.SyncParams(); err != nil {
			return fmt.Errorf("step %d: keeping the best weights: %w", s.Step, err)
		}
		b.value = append(b.value[:0], t.critic.Params.Data...)
	}
	return nil
}

func (b *bestCheckpoint) restore(t *Trainer) error {
	for _, x := range []struct {
		m      *model.Model
		params []float32
	}{{t.policy, b.policy}, {t.critic, b.value}} {
		if x.m == nil {
			continue
		}
		copy(x.m.Params.Data, x.params)
		if err := x.m.Upload(); err != nil {
			return fmt.Errorf("rewind: %w", err)
		}
	}
	t.reused = nil
	return nil
}
