package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ragen-go/ragen/internal/atomicfile"
)

// The files of a checkpoint directory, named as Hugging Face names them.
const (
	ModelFile        = "model.safetensors"     // the parameters, F32
	ConfigFile       = "config.json"           // the model config
	TokenizerFile    = "tokenizer.json"        // the tokenizer
	OptimizerFile    = "optimizer.safetensors" // optional: optimizer state
	TrainerStateFile = "trainer_state.json"    // optional: step, RNG state, ...
)

// Checkpoint is what SaveDir writes. Tensors are written as they are, with
// no copy (they may be views of the flat parameter buffer).
type Checkpoint struct {
	Model     []Tensor          // → model.safetensors (required)
	ModelMeta map[string]string // its metadata; "format": "pt" is added as HF loaders require
	Config    []byte            // → config.json (required, JSON)
	Tokenizer []byte            // → tokenizer.json (required, JSON)

	Optimizer     []Tensor          // → optimizer.safetensors, when not empty
	OptimizerMeta map[string]string // its metadata (the step count, ...)
	TrainerState  []byte            // → trainer_state.json, when not nil (JSON)
}

// SaveDir writes c as the checkpoint directory dir, atomically: the files go
// into a new sibling dir.tmp-*, each written atomically and fsynced; then,
// if dir already holds a checkpoint, it is renamed to dir.old-*, the new one
// is renamed to dir and the old one deleted. A crash before the renames
// leaves the old checkpoint in place (and a dir.tmp-* that the next SaveDir
// removes); a crash between the two renames leaves no dir but a complete
// dir.old-*, which LoadDir falls back to. An existing dir that is not a
// checkpoint (no model.safetensors, not empty) is never replaced.
// One writer per dir at a time.
func SaveDir(dir string, c Checkpoint) error {
	dir = filepath.Clean(dir)
	fail := func(err error) error { return fmt.Errorf("cannot save checkpoint %s: %w", dir, err) }
	if err := c.validate(); err != nil {
		return fail(err)
	}
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fail(fmt.Errorf("%s exists and is not a directory", dir))
		}
		if !isCheckpointOrEmpty(dir) {
			return fail(fmt.Errorf("%s exists and is not a checkpoint directory (no %s); refusing to replace it", dir, ModelFile))
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return fail(err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes it 0700
		os.RemoveAll(tmp)
		return fail(err)
	}
	if err := c.writeFiles(tmp); err != nil {
		os.RemoveAll(tmp)
		return fail(err)
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
		os.RemoveAll(tmp)
		return fail(err)
	}
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".old-"+strings.TrimPrefix(filepath.Base(tmp), filepath.Base(dir)+".tmp-"))
		if err := os.Rename(dir, old); err != nil {
			os.RemoveAll(tmp)
			return fail(err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		os.RemoveAll(tmp)
		return fail(err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(dir)); err != nil {
		return fail(err)
	}
	// The new checkpoint is in place: what earlier saves left behind goes.
	for _, pattern := range []string{".old-*", ".tmp-*"} {
		stale, _ := filepath.Glob(globEscape(dir) + pattern)
		for _, s := range stale {
			os.RemoveAll(s)
		}
	}
	return nil
}

func (c *Checkpoint) validate() error {
	if _, _, err := encodeHeader(c.Model, c.ModelMeta, "F32"); err != nil {
		return fmt.Errorf("%s: %w", ModelFile, err)
	}
	if _, _, err := encodeHeader(c.Optimizer, c.OptimizerMeta, "F32"); err != nil {
		return fmt.Errorf("%s: %w", OptimizerFile, err)
	}
	for _, f := range []struct {
		name     string
		data     []byte
		optional bool
	}{{ConfigFile, c.Config, false}, {TokenizerFile, c.Tokenizer, false}, {TrainerStateFile, c.TrainerState, true}} {
		if f.optional && f.data == nil {
			continue
		}
		if !json.Valid(f.data) {
			return fmt.Errorf("%s: not valid JSON", f.name)
		}
	}
	return nil
}

func (c *Checkpoint) writeFiles(dir string) error {
	meta := map[string]string{"format": "pt"}
	for k, v := range c.ModelMeta {
		meta[k] = v
	}
	if err := WriteSafetensors(filepath.Join(dir, ModelFile), c.Model, meta); err != nil {
		return err
	}
	if err := writeBytes(filepath.Join(dir, ConfigFile), c.Config); err != nil {
		return err
	}
	if err := writeBytes(filepath.Join(dir, TokenizerFile), c.Tokenizer); err != nil {
		return err
	}
	if len(c.Optimizer) > 0 {
		if err := WriteSafetensors(filepath.Join(dir, OptimizerFile), c.Optimizer, c.OptimizerMeta); err != nil {
			return err
		}
	}
	if c.TrainerState != nil {
		if err := writeBytes(filepath.Join(dir, TrainerStateFile), c.TrainerState); err != nil {
			return err
		}
	}
	return nil
}

func writeBytes(path string, data []byte) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

func isCheckpointOrEmpty(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	if len(entries) == 0 {
		return true
	}
	_, err = os.Stat(filepath.Join(dir, ModelFile))
	return err == nil
}

// globEscape quotes the glob metacharacters of a path.
func globEscape(p string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(p)
}

// Dir is a loaded checkpoint directory. The safetensors files stay open so
// that the caller reads each tensor straight into its own buffers; Close
// releases them.
type Dir struct {
	Path         string // the directory actually read (a dir.old-* after a crash)
	Model        *File
	Config       []byte
	Tokenizer    []byte
	Optimizer    *File  // nil when the checkpoint has no optimizer state
	TrainerState []byte // nil when absent
}

// LoadDir opens the checkpoint directory dir and checks every file in it:
// both safetensors headers, and that the JSON files parse. If dir is
// missing but a complete dir.old-* is there (a crash in the middle of
// SaveDir's two renames), that one is loaded.
func LoadDir(dir string) (*Dir, error) {
	dir = filepath.Clean(dir)
	path := dir
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		olds, _ := filepath.Glob(globEscape(dir) + ".old-*")
		if len(olds) == 0 {
			return nil, fmt.Errorf("cannot load checkpoint %s: %w", dir, err)
		}
		path = olds[len(olds)-1]
	}
	d := &Dir{Path: path}
	var err error
	if d.Model, err = OpenSafetensors(filepath.Join(path, ModelFile)); err != nil {
		return nil, fmt.Errorf("cannot load checkpoint %s: %w", dir, err)
	}
	fail := func(err error) (*Dir, error) {
		d.Close()
		return nil, fmt.Errorf("cannot load checkpoint %s: %w", dir, err)
	}
	if d.Config, err = readJSON(filepath.Join(path, ConfigFile), false); err != nil {
		return fail(err)
	}
	if d.Tokenizer, err = readJSON(filepath.Join(path, TokenizerFile), false); err != nil {
		return fail(err)
	}
	if d.TrainerState, err = readJSON(filepath.Join(path, TrainerStateFile), true); err != nil {
		return fail(err)
	}
	opt := filepath.Join(path, OptimizerFile)
	if _, err := os.Stat(opt); err == nil {
		if d.Optimizer, err = OpenSafetensors(opt); err != nil {
			return fail(err)
		}
	}
	return d, nil
}

// readJSON reads a JSON file; an optional one that does not exist gives nil.
func readJSON(path string, optional bool) ([]byte, error) {
	b, err := os.ReadFile(path)
	if optional && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%s: not valid JSON (truncated or corrupt)", path)
	}
	return b, nil
}

// Close releases the open safetensors files.
func (d *Dir) Close() error {
	var errs []error
	if d.Model != nil {
		errs = append(errs, d.Model.Close())
	}
	if d.Optimizer != nil {
		errs = append(errs, d.Optimizer.Close())
	}
	return errors.Join(errs...)
}
