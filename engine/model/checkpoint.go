package model

import (
	"encoding/json"
	"fmt"

	"github.com/ragen-go/ragen/engine/checkpoint"
)

// Tensors returns every parameter as a checkpoint tensor viewing the flat
// host buffer Params (no copy), under its Hugging Face name; on a device
// backend call SyncParams first.
func (m *Model) Tensors() []checkpoint.Tensor {
	out := make([]checkpoint.Tensor, len(m.Layout.Views))
	for i, v := range m.Layout.Views {
		out[i] = checkpoint.Tensor{Name: v.Name, Shape: v.Shape, Data: m.Params.Data[v.Offset : v.Offset+v.Size]}
	}
	return out
}

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
	extra.Model, extra.Config, extra.Tokenizer = m.Tensors(), cfg, tokenizerJSON
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
