package model

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/checkpoint"
)

// Tensors returns every parameter as a checkpoint tensor viewing the flat
// host buffer Params (no copy), under its Hugging Face name; on a device
// backend call SyncParams first. A base holding its frozen matrices as
// bf16 only (see WithLoRA) gives them widened, in new memory.
func (m *Model) Tensors() ([]checkpoint.Tensor, error) {
	out := make([]checkpoint.Tensor, len(m.Layout.Views))
	for i, v := range m.Layout.Views {
		x, err := m.values(v)
		if err != nil {
			return nil, err
		}
		out[i] = checkpoint.Tensor{Name: v.Name, Shape: v.Shape, Data: x}
	}
	return out, nil
}

// values returns the float32 values of view v (of Layout): a view of
// Params, or for a matrix a frozen base holds as bf16 only (w16) its
// values widened (exact) into new memory.
func (m *Model) values(v View) ([]float32, error) {
	if x := m.Params.Slice(v.Name); x != nil || m.w16 == nil {
		return x, nil
	}
	out := make([]float32, v.Size)
	b, x := m.b, m.b.Slice(m.w16, v.Offset, v.Size)
	if hm, ok := b.(backend.HostMemory); ok {
		b.FromBF16(hm.Wrap(out), x, v.Size)
		return out, b.Err()
	}
	tmp, err := b.Alloc(v.Size)
	if err != nil {
		return nil, fmt.Errorf("backend %s: widening %s: %w", b.Name(), v.Name, err)
	}
	defer b.Free(tmp)
	b.FromBF16(tmp, x, v.Size)
	if err := b.Download(out, tmp); err != nil {
		return nil, fmt.Errorf("backend %s: %s: %w", b.Name(), v.Name, err)
	}
	return out, nil
}

// errFrozen is the error of loading parameters into, or training, a base
// that holds its frozen matrices as bf16 only.
var errFrozen = errors.New("the model is a frozen base holding its matrices as bf16 only (WithLoRA or NewFrozen made it so): load or train a model of its own (hf.Load without Options.Frozen, New)")

// Save writes m as a checkpoint directory (model.safetensors, config.json,
// tokenizer.json), atomically; extra may add optimizer and trainer state.
func (m *Model) Save(dir string, tokenizerJSON []byte, extra checkpoint.Checkpoint) error {
	if err := m.SyncParams(); err != nil {
		return err
	}
	cfg, err := json.MarshalIndent(m.Config, "", "  ")
	if err != nil {
		return err
	}
	if extra.Model, err = m.Tensors(); err != nil {
		return err
	}
	extra.Config, extra.Tokenizer = cfg, tokenizerJSON
	return checkpoint.SaveDir(dir, extra)
}

// Load reads a checkpoint directory written by Save: the config, then every
// parameter into the flat buffer, checking names and shapes. It returns the
// model and the open directory (for the tokenizer and optimizer state);
// close it when done.
func Load(dir string) (*Model, *checkpoint.Dir, error) {
	d, err := checkpoint.LoadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var c Config
	if err := json.Unmarshal(d.Config, &c); err != nil {
		d.Close()
		return nil, nil, fmt.Errorf("cannot load checkpoint %s: config.json: %w", dir, err)
	}
	m, err := New(c, 0)
	if err != nil {
		d.Close()
		return nil, nil, fmt.Errorf("cannot load checkpoint %s: %w", dir, err)
	}
	for _, v := range m.Layout.Views {
		if err := d.Model.Load(v.Name, v.Shape, m.Params.Data[v.Offset:v.Offset+v.Size]); err != nil {
			d.Close()
			return nil, nil, fmt.Errorf("cannot load checkpoint %s: %w", dir, err)
		}
	}
	return m, d, nil
}

// Restore loads the parameters of the checkpoint directory at dir (written
// by Save from a model of the same architecture: a plain model, or
// adapters of the same configuration) into m and uploads them. It returns
// the open directory (for the optimizer state); close it when done.
func (m *Model) Restore(dir string) (*checkpoint.Dir, error) {
	d, err := checkpoint.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := json.Unmarshal(d.Config, &c); err != nil {
		d.Close()
		return nil, fmt.Errorf("cannot load checkpoint %s: config.json: %w", dir, err)
	}
	if m.w16 != nil {
		d.Close()
		return nil, fmt.Errorf("cannot load checkpoint %s: %w", dir, errFrozen)
	}
	if c != m.Config {
		d.Close()
		return nil, fmt.Errorf("cannot load checkpoint %s: its architecture differs from the model's", dir)
	}
	for _, v := range m.Layout.Views {
		if err := d.Model.Load(v.Name, v.Shape, m.Params.Data[v.Offset:v.Offset+v.Size]); err != nil {
			d.Close()
			return nil, fmt.Errorf("cannot load checkpoint %s: %w", dir, err)
		}
	}
	if err := m.Upload(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}
