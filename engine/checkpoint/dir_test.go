package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/internal/atomicfile"
)

func sampleCheckpoint(v float32) Checkpoint {
	return Checkpoint{
		Model:         []Tensor{{Name: "w", Shape: []int{2, 2}, Data: []float32{v, 2, 3, 4}}},
		Config:        []byte(`{"d_model": 4}`),
		Tokenizer:     []byte(`{"model": {"type": "BPE"}}`),
		Optimizer:     []Tensor{{Name: "adamw.exp_avg", Shape: []int{4}, Data: []float32{0.1, 0.2, 0.3, v}}},
		OptimizerMeta: map[string]string{"adamw.step": "7"},
		TrainerState:  []byte(`{"step": 7}`),
	}
}

// modelValue loads dir and returns w[0], the value that tells saves apart.
func modelValue(t *testing.T, dir string) float32 {
	t.Helper()
	d, err := LoadDir(dir)
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	defer d.Close()
	w, err := d.Model.Get("w")
	if err != nil {
		t.Fatal(err)
	}
	return w.Data[0]
}

// siblings lists what is next to dir besides it (temporary or old copies).
func siblings(t *testing.T, dir string) []string {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Dir(dir))
	var out []string
	for _, e := range entries {
		if e.Name() != filepath.Base(dir) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestSaveLoadDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "step-100")
	if err := SaveDir(dir, sampleCheckpoint(1)); err != nil {
		t.Fatal(err)
	}
	d, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if string(d.Config) != `{"d_model": 4}` || string(d.Tokenizer) != `{"model": {"type": "BPE"}}` || string(d.TrainerState) != `{"step": 7}` {
		t.Errorf("JSON files: %s %s %s", d.Config, d.Tokenizer, d.TrainerState)
	}
	if d.Model.Metadata()["format"] != "pt" {
		t.Errorf("model metadata %v lacks format=pt", d.Model.Metadata())
	}
	dst := make([]float32, 4)
	if err := d.Optimizer.Load("adamw.exp_avg", []int{4}, dst); err != nil || dst[3] != 1 {
		t.Errorf("optimizer: %v %v", err, dst)
	}
	if d.Optimizer.Metadata()["adamw.step"] != "7" {
		t.Errorf("optimizer metadata %v", d.Optimizer.Metadata())
	}
	names, _ := os.ReadDir(dir)
	var files []string
	for _, n := range names {
		files = append(files, n.Name())
	}
	want := []string{ConfigFile, ModelFile, OptimizerFile, TokenizerFile, TrainerStateFile}
	if !slices.Equal(files, want) {
		t.Errorf("files %v, want %v (no temporaries)", files, want)
	}
	if s := siblings(t, dir); len(s) != 0 {
		t.Errorf("left beside the checkpoint: %v", s)
	}
	for _, p := range []string{dir, filepath.Join(dir, ModelFile), filepath.Join(dir, ConfigFile)} {
		if st, _ := os.Stat(p); st.Mode().Perm()&0o044 != 0o044 {
			t.Errorf("%s has mode %v: others cannot read it", p, st.Mode())
		}
	}

	// Optional files are optional.
	c := sampleCheckpoint(2)
	c.Optimizer, c.TrainerState = nil, nil
	bare := filepath.Join(t.TempDir(), "bare")
	if err := SaveDir(bare, c); err != nil {
		t.Fatal(err)
	}
	d2, err := LoadDir(bare)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if d2.Optimizer != nil || d2.TrainerState != nil {
		t.Errorf("optional parts present: %v %s", d2.Optimizer, d2.TrainerState)
	}
}

func TestSaveDirReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "latest")
	for v := float32(1); v <= 3; v++ {
		if err := SaveDir(dir, sampleCheckpoint(v)); err != nil {
			t.Fatal(err)
		}
		if got := modelValue(t, dir); got != v {
			t.Fatalf("save %v: loaded %v", v, got)
		}
		if s := siblings(t, dir); len(s) != 0 {
			t.Fatalf("save %v left %v", v, s)
		}
	}
}

// TestSaveDirFailure: a write that fails part-way (here fsync, as on a full
// disk) leaves the previous checkpoint loadable and nothing else behind.
func TestSaveDirFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "latest")
	if err := SaveDir(dir, sampleCheckpoint(1)); err != nil {
		t.Fatal(err)
	}
	for _, failOn := range []string{ModelFile, TokenizerFile, OptimizerFile, TrainerStateFile, ".tmp-"} {
		t.Run(failOn, func(t *testing.T) {
			defer func(f func(*os.File) error) { atomicfile.Sync = f }(atomicfile.Sync)
			atomicfile.Sync = func(f *os.File) error {
				base := filepath.Base(f.Name())
				if strings.Contains(base, "."+failOn+".tmp-") || failOn == ".tmp-" && strings.Contains(base, ".tmp-") && !strings.HasPrefix(base, ".") {
					return errors.New("no space left on device")
				}
				return f.Sync()
			}
			err := SaveDir(dir, sampleCheckpoint(2))
			if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.HasPrefix(err.Error(), "cannot save checkpoint "+dir+": ") {
				t.Fatalf("SaveDir: %v", err)
			}
			if got := modelValue(t, dir); got != 1 {
				t.Errorf("after a failed save the checkpoint holds %v, want the old 1", got)
			}
			if s := siblings(t, dir); len(s) != 0 {
				t.Errorf("a failed save left %v", s)
			}
		})
	}
}

// TestCrashRecovery replays what a killed process leaves on disk.
func TestCrashRecovery(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "latest")
	if err := SaveDir(dir, sampleCheckpoint(1)); err != nil {
		t.Fatal(err)
	}

	// Killed while writing the new files: a half-filled dir.tmp-*.
	tmp := dir + ".tmp-123"
	os.Mkdir(tmp, 0o755)
	os.WriteFile(filepath.Join(tmp, ModelFile), []byte("partial"), 0o644)
	if got := modelValue(t, dir); got != 1 {
		t.Errorf("with a stale temporary, loaded %v, want 1", got)
	}

	// Killed between the two renames: no dir, a complete dir.old-*.
	if err := os.Rename(dir, dir+".old-456"); err != nil {
		t.Fatal(err)
	}
	if got := modelValue(t, dir); got != 1 {
		t.Errorf("after a crash between renames, loaded %v, want 1 from dir.old-*", got)
	}

	// The next save puts a new checkpoint in place and clears both leftovers.
	if err := SaveDir(dir, sampleCheckpoint(2)); err != nil {
		t.Fatal(err)
	}
	if got := modelValue(t, dir); got != 2 {
		t.Errorf("after the next save, loaded %v, want 2", got)
	}
	if s := siblings(t, dir); len(s) != 0 {
		t.Errorf("leftovers not cleared: %v", s)
	}
}

func TestSaveDirRejects(t *testing.T) {
	root := t.TempDir()
	user := filepath.Join(root, "notes")
	os.Mkdir(user, 0o755)
	os.WriteFile(filepath.Join(user, "thesis.tex"), []byte("precious"), 0o644)
	err := SaveDir(user, sampleCheckpoint(1))
	if err == nil || !strings.Contains(err.Error(), "is not a checkpoint directory (no model.safetensors); refusing to replace it") {
		t.Errorf("replacing a user folder: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(user, "thesis.tex")); string(b) != "precious" {
		t.Error("user folder damaged")
	}
	for _, c := range []struct {
		mod  func(*Checkpoint)
		want string
	}{
		{func(c *Checkpoint) { c.Config = []byte(`{"d_model":`) }, "config.json: not valid JSON"},
		{func(c *Checkpoint) { c.Tokenizer = nil }, "tokenizer.json: not valid JSON"},
		{func(c *Checkpoint) { c.Model[0].Shape = []int{3} }, `model.safetensors: tensor "w": shape [3] does not match its 4 values`},
	} {
		ck := sampleCheckpoint(1)
		c.mod(&ck)
		dir := filepath.Join(root, "ck")
		err := SaveDir(dir, ck)
		if err == nil || err.Error() != "cannot save checkpoint "+dir+": "+c.want {
			t.Errorf("SaveDir: %v, want %q", err, c.want)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Error("a rejected save created the directory")
		}
	}
}

func TestLoadDirCorrupt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	if err := SaveDir(dir, sampleCheckpoint(1)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"d_mo`), 0o644)
	_, err := LoadDir(dir)
	want := "cannot load checkpoint " + dir + ": " + filepath.Join(dir, ConfigFile) + ": not valid JSON (truncated or corrupt)"
	if err == nil || err.Error() != want {
		t.Errorf("corrupt config: %v\nwant %s", err, want)
	}
	os.Remove(filepath.Join(dir, TokenizerFile))
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{}`), 0o644)
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "tokenizer.json: no such file") {
		t.Errorf("missing tokenizer: %v", err)
	}
	if _, err := LoadDir(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("missing dir: %v", err)
	}
}
