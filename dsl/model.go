package dsl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ModelSpec names the policy of an Experiment: a size preset of a model
// trained here from a warm start — "tiny", "small" or "base" — or a model
// to start from, Pretrained(dir) or Checkpoint(dir).
type ModelSpec string

// The prefixes of loaded models in a ModelSpec.
const (
	pretrainedPrefix = "pretrained:"
	checkpointPrefix = "checkpoint:"
)

// Pretrained starts from a Hugging Face model directory, as RAGEN starts
// from Qwen2.5-0.5B-Instruct: config.json (qwen2 or llama), the
// safetensors weights, tokenizer.json and tokenizer_config.json, whose
// chat template lays out the prompts. There is no warm start unless
// WarmStart.Steps is set; ContextLength and VocabSize are the checkpoint's.
//
//	Model: ragen.Pretrained("models/Qwen2.5-0.5B-Instruct")
func Pretrained(dir string) ModelSpec { return ModelSpec(pretrainedPrefix + dir) }

// Checkpoint starts from a checkpoint of ours: a run's checkpoint
// directory (Run.Checkpoints) or one written by model.Save. As for
// Pretrained, there is no warm start unless WarmStart.Steps is set.
func Checkpoint(dir string) ModelSpec { return ModelSpec(checkpointPrefix + dir) }

// String is the preset name, or "pretrained:dir", "checkpoint:dir".
func (m ModelSpec) String() string { return string(m) }

// source splits a loaded model's spec: kind is "pretrained" or
// "checkpoint" with its directory, or "" for a preset.
func (m ModelSpec) source() (kind, dir string) {
	for _, p := range []string{pretrainedPrefix, checkpointPrefix} {
		if d, ok := strings.CutPrefix(string(m), p); ok {
			return strings.TrimSuffix(p, ":"), d
		}
	}
	return "", ""
}

// identity describes the files of a loaded model that decide its weights,
// tokenizer and template, for the run cache key: the absolute path, the
// hashes of the small JSON files and the size and modification time of
// the large ones (hashing gigabytes of weights on every run would cost
// more than it saves). "" for a preset. A checkpoint's policy/ is
// described too (a run's step directory).
func (m ModelSpec) identity() (string, error) {
	kind, dir := m.source()
	if kind == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(abs)
	for _, d := range []string{abs, filepath.Join(abs, "policy")} {
		entries, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		for _, e := range entries { // sorted by name
			name := e.Name()
			switch {
			case name == "config.json" || name == "tokenizer_config.json" || name == "generation_config.json" || name == "model.safetensors.index.json":
				data, err := os.ReadFile(filepath.Join(d, name))
				if err != nil {
					return "", err
				}
				sum := sha256.Sum256(data)
				fmt.Fprintf(&b, "\n%s/%s sha256 %s", filepath.Base(d), name, hex.EncodeToString(sum[:]))
			case strings.HasSuffix(name, ".safetensors") || name == "tokenizer.json":
				info, err := e.Info()
				if err != nil {
					return "", err
				}
				fmt.Fprintf(&b, "\n%s/%s size %d mtime %d", filepath.Base(d), name, info.Size(), info.ModTime().UnixNano())
			}
		}
	}
	return b.String(), nil
}
