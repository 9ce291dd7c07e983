package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ragen-go/ragen/engine/checkpoint"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/internal/atomicfile"
)

// Save writes m and tok as a Hugging Face model directory that
// transformers (AutoModelForCausalLM, AutoTokenizer), vLLM and Load read:
// config.json (model_type qwen2, or llama for a model without q/k/v
// biases), model.safetensors (F32, Hugging Face parameter names, no
// lm_head.weight when tied), tokenizer.json, tokenizer_config.json with the
// chat template (ChatMLTemplate with tmpl's default system message; plain
// ChatML when tmpl is nil) and generation_config.json (stop at <|im_end|>
// and <|endoftext|>, when the tokenizer has them).
//
// A policy with LoRA adapters is saved merged (model.Model.Merged): the
// base's weights with the adapters folded in; its adapters alone are
// SaveAdapter's PEFT directory.
//
// The model files appear atomically (checkpoint.SaveDir); the two
// tokenizer and generation configs are then written atomically each. A
// model with a value head or without an LM head has no Hugging Face
// equivalent and is refused: save a critic with model.Save.
func Save(dir string, m *model.Model, tok *tokenizer.Tokenizer, tmpl *ChatTemplate) error {
	fail := func(err error) error { return fmt.Errorf("cannot save Hugging Face model %s: %w", dir, err) }
	if m.LoRA() != nil && m.Config.LMHead { // a policy with adapters: export them folded in
		merged, err := m.Merged()
		if err != nil {
			return fail(err)
		}
		m = merged
	}
	if err := m.SyncParams(); err != nil {
		return fail(err)
	}
	c := m.Config
	switch {
	case c.ValueHead:
		return fail(errors.New("value_head: a Hugging Face causal LM has no value head (save the critic with model.Save)"))
	case !c.LMHead:
		return fail(errors.New("lm_head: the model has no LM head, so it is no causal LM"))
	case tok.VocabSize() > c.VocabSize:
		return fail(fmt.Errorf("vocab_size: the model's %d is smaller than the tokenizer's %d ids", c.VocabSize, tok.VocabSize()))
	}
	cfg, err := marshalConfig(c)
	if err != nil {
		return fail(err)
	}
	tokJSON, err := tok.MarshalJSON()
	if err != nil {
		return fail(err)
	}
	tensors, err := m.Tensors()
	if err != nil {
		return fail(err)
	}
	if err := checkpoint.SaveDir(dir, checkpoint.Checkpoint{Model: tensors, Config: cfg, Tokenizer: tokJSON}); err != nil {
		return err
	}
	sp := tok.SpecialIDs()
	var eos []int
	for _, id := range []int{sp.ImEnd, sp.EndOfText} {
		if id >= 0 {
			eos = append(eos, id)
		}
	}
	gen := map[string]any{"eos_token_id": eos}
	if sp.EndOfText >= 0 {
		gen["pad_token_id"] = sp.EndOfText
	}
	system := ""
	if tmpl != nil {
		system = tmpl.DefaultSystem
	}
	tc := map[string]any{
		"chat_template":                ChatMLTemplate(system),
		"tokenizer_class":              "Qwen2Tokenizer",
		"model_max_length":             c.MaxPositions,
		"add_bos_token":                false,
		"clean_up_tokenization_spaces": false,
		"bos_token":                    nil,
	}
	if sp.ImEnd >= 0 {
		tc["eos_token"] = tokenizer.ImEnd
	}
	if sp.EndOfText >= 0 {
		tc["pad_token"] = tokenizer.EndOfText
	}
	for name, v := range map[string]any{GenerationFile: gen, TokenizerConfigFile: tc} {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fail(err)
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, name), data); err != nil {
			return fail(err)
		}
	}
	return nil
}
