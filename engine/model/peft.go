package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ragen-go/ragen/engine/checkpoint"
	"github.com/ragen-go/ragen/internal/atomicfile"
)

// The files of a PEFT adapter directory, and the prefix PEFT gives the
// names of its tensors (the PeftModel wraps the causal LM, whose decoder
// is "model").
const (
	AdapterConfigFile  = "adapter_config.json"
	AdapterWeightsFile = "adapter_model.safetensors"
	peftPrefix         = "base_model.model."
)

// peftConfig is adapter_config.json as PEFT writes it for LoRA.
type peftConfig struct {
	PeftType      string   `json:"peft_type"`
	TaskType      string   `json:"task_type"`
	R             int      `json:"r"`
	LoraAlpha     float64  `json:"lora_alpha"`
	LoraDropout   float64  `json:"lora_dropout"`
	TargetModules []string `json:"target_modules"`
	Bias          string   `json:"bias"`
	FanInFanOut   bool     `json:"fan_in_fan_out"`
	InferenceMode bool     `json:"inference_mode"`
	UseRSLoRA     bool     `json:"use_rslora"`
	UseDoRA       bool     `json:"use_dora"`
	BaseModel     string   `json:"base_model_name_or_path"`
	ModulesToSave []string `json:"modules_to_save"`
}

// SaveAdapter writes m's adapters as a PEFT adapter directory that
// peft.PeftModel.from_pretrained loads onto the base: adapter_config.json
// and adapter_model.safetensors (F32, PEFT's tensor names). The weights
// are written first, each file atomically, so a directory with a config
// holds complete weights. A critic's value head has no PEFT equivalent
// and is refused: save the critic with Save.
func (m *Model) SaveAdapter(dir string) error {
	fail := func(err error) error { return fmt.Errorf("cannot save adapter %s: %w", dir, err) }
	if m.lora == nil {
		return fail(errors.New("the model has no adapters (WithLoRA)"))
	}
	if m.Config.ValueHead {
		return fail(errors.New("value_head: a PEFT causal-LM adapter has no value head (save the critic with Save)"))
	}
	if err := m.SyncParams(); err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	tensors, err := m.Tensors()
	if err != nil {
		return fail(err)
	}
	for i := range tensors {
		tensors[i].Name = peftPrefix + tensors[i].Name
	}
	if err := checkpoint.WriteSafetensors(filepath.Join(dir, AdapterWeightsFile), tensors, map[string]string{"format": "pt"}); err != nil {
		return fail(err)
	}
	var targets []string
	for _, mod := range m.lora.modules() {
		targets = append(targets, mod.shortName())
	}
	cfg, err := json.MarshalIndent(peftConfig{PeftType: "LORA", TaskType: "CAUSAL_LM", R: m.lora.Rank, LoraAlpha: m.lora.Alpha,
		TargetModules: targets, Bias: "none", InferenceMode: true}, "", "  ")
	if err != nil {
		return fail(err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, AdapterConfigFile), cfg); err != nil {
		return fail(err)
	}
	return nil
}

// LoadAdapter reads a PEFT LoRA adapter directory (SaveAdapter's, or
// PEFT's save_pretrained) onto m as its base. Options that change the
// math and that this engine does not implement (DoRA, rsLoRA, biases,
// fan_in_fan_out, extra trained modules) are refused by name; every
// adapter tensor must be in the file with its shape, and every tensor in
// the file must be an adapter.
func (m *Model) LoadAdapter(dir string) (*Model, error) {
	fail := func(err error) (*Model, error) { return nil, fmt.Errorf("cannot load adapter %s: %w", dir, err) }
	raw, err := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
	if err != nil {
		return fail(err)
	}
	var pc peftConfig
	if err := json.Unmarshal(raw, &pc); err != nil {
		return fail(fmt.Errorf("%s: %w", AdapterConfigFile, err))
	}
	switch {
	case pc.PeftType != "LORA":
		return fail(fmt.Errorf("peft_type: %q, only LORA is supported", pc.PeftType))
	case pc.UseDoRA:
		return fail(errors.New("use_dora: DoRA adapters are not supported"))
	case pc.UseRSLoRA:
		return fail(errors.New("use_rslora: rank-stabilised scaling is not supported"))
	case pc.Bias != "" && pc.Bias != "none":
		return fail(fmt.Errorf("bias: %q, only \"none\" is supported", pc.Bias))
	case pc.FanInFanOut:
		return fail(errors.New("fan_in_fan_out: true is for Conv1D layers (GPT-2), not Qwen2 or Llama"))
	case len(pc.ModulesToSave) > 0:
		return fail(fmt.Errorf("modules_to_save: %v: fully trained modules are not supported", pc.ModulesToSave))
	}
	a, err := m.WithLoRA(LoRA{Rank: pc.R, Alpha: pc.LoraAlpha, Targets: pc.TargetModules}, false, 0)
	if err != nil {
		return fail(err)
	}
	f, err := checkpoint.OpenSafetensors(filepath.Join(dir, AdapterWeightsFile))
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	for _, v := range a.Layout.Views {
		if err := f.Load(peftPrefix+v.Name, v.Shape, a.Params.Data[v.Offset:v.Offset+v.Size]); err != nil {
			return fail(err)
		}
	}
	for _, name := range f.Names() {
		if _, ok := a.Layout.Lookup(strings.TrimPrefix(name, peftPrefix)); !ok || !strings.HasPrefix(name, peftPrefix) {
			return fail(fmt.Errorf("tensor %q is no adapter of this base and configuration", name))
		}
	}
	if err := a.Upload(); err != nil {
		return fail(err)
	}
	return a, nil
}

// Merged returns a model without adapters, on the CPU, whose weights are
// the base's with each adapter folded in (W + s·B·A, computed in float64):
// what to export as a Hugging Face directory (hf.Save) that transformers
// or vLLM load without PEFT.
func (m *Model) Merged() (*Model, error) {
	if m.lora == nil {
		return nil, errors.New("merge: the model has no adapters")
	}
	if err := m.base.SyncParams(); err != nil {
		return nil, err
	}
	if err := m.SyncParams(); err != nil {
		return nil, err
	}
	c := m.base.Config
	out, err := New(c, 0)
	if err != nil {
		return nil, err
	}
	for _, v := range out.Layout.Views {
		x, err := m.base.values(v)
		if err != nil {
			return nil, err
		}
		copy(out.Params.Slice(v.Name), x)
	}
	r, s := m.lora.Rank, float64(m.lora.Scale())
	for i := range c.NumLayers {
		for _, mod := range m.lora.modules() {
			in, o := mod.dims(c)
			A, B := m.Params.Slice(adapterName(i, mod, "lora_A")), m.Params.Slice(adapterName(i, mod, "lora_B"))
			W := out.Params.Slice(fmt.Sprintf("model.layers.%d.%s.weight", i, moduleNames[mod]))
			for row := range o {
				for col := range in {
					var acc float64
					for k := range r {
						acc += float64(B[row*r+k]) * float64(A[k*in+col])
					}
					W[row*in+col] = float32(float64(W[row*in+col]) + s*acc)
				}
			}
		}
	}
	return out, nil
}
