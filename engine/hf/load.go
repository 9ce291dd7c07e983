package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ragen-go/ragen/engine/checkpoint"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/tokenizer"
)

// The files of a Hugging Face model directory.
const (
	ConfigFile          = "config.json"
	WeightsFile         = "model.safetensors"
	WeightsIndexFile    = "model.safetensors.index.json" // sharded weights: tensor name → shard file
	TokenizerFile       = "tokenizer.json"
	TokenizerConfigFile = "tokenizer_config.json" // chat template, eos token
	GenerationFile      = "generation_config.json"
)

// Options adjust what Load builds.
type Options struct {
	// ValueHead adds a scalar value head initialised to 0 (value_head.weight
	// and value_head.bias, absent from the checkpoint), so that the loaded
	// model can serve as a critic initialised from the pretrained one, as
	// RAGEN does. Default false.
	ValueHead bool
	// NoChatTemplate skips tokenizer_config.json: Load then returns a nil
	// template. For checkpoints whose template is not ChatML (Llama 3's),
	// which would otherwise be an error. Default false.
	NoChatTemplate bool
	// Frozen loads the model to serve only as the frozen base of LoRA
	// adapters (model.WithLoRA) or to decode, never to train its own
	// weights (model.NewFrozen): when the checkpoint stores every matrix
	// as BF16, as Qwen2.5's do, they go from the files into bf16 storage,
	// the embedding too when it is BF16, and no float32 copy of them ever
	// exists (Qwen2.5-0.5B: 1 GB instead of 2, and no 2 GB peak on the
	// way); decoding it by itself reads those bf16 matrices where they
	// are, so it holds the weights once (decision 59: 16 sequences of
	// Qwen2.5-0.5B decode in 1.45 GB). The numbers are those of the
	// float32 load, bit for bit. F32
	// and F16 checkpoints load as float32, held as bf16 only if their
	// matrices are bf16-exact, as WithLoRA holds them. Cannot be combined
	// with ValueHead. Default false.
	Frozen bool
}

// Load reads a Hugging Face model directory — config.json, the weights in
// model.safetensors or in shards listed by model.safetensors.index.json,
// tokenizer.json, and tokenizer_config.json's chat template — and returns
// the model, its tokenizer and its chat template (nil when the directory
// has no tokenizer_config.json, it has no chat_template, or
// opts.NoChatTemplate).
//
// Weights in F32, F16 or BF16 are converted to float32 straight into the
// model's flat parameter buffer, read a megabyte at a time (pread): loading
// holds no second copy of the weights. With opts.Frozen the matrices of a
// BF16 checkpoint stay bf16 (model.NewFrozen). (Memory-mapping the files would not
// save memory: every value is converted to float32 anyway, and the page
// cache holds the file either way.) Every parameter of the model must be in the
// files with the expected shape, and every tensor in the files must be a
// parameter (lm_head.weight of a tied model and rotary inv_freq buffers
// are ignored); otherwise the error names the tensor.
func Load(dir string, opts Options) (*model.Model, *tokenizer.Tokenizer, *ChatTemplate, error) {
	fail := func(err error) (*model.Model, *tokenizer.Tokenizer, *ChatTemplate, error) {
		return nil, nil, nil, fmt.Errorf("cannot load Hugging Face model %s: %w", dir, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return fail(err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return fail(err)
	}
	c.ValueHead = opts.ValueHead
	tok, err := tokenizer.Load(filepath.Join(dir, TokenizerFile))
	if err != nil {
		return fail(err)
	}
	if tok.VocabSize() > c.VocabSize {
		return fail(fmt.Errorf("config.json: vocab_size: %d is smaller than the tokenizer's %d ids", c.VocabSize, tok.VocabSize()))
	}
	var tmpl *ChatTemplate
	if !opts.NoChatTemplate {
		if tmpl, err = loadChatTemplate(filepath.Join(dir, TokenizerConfigFile)); err != nil {
			return fail(fmt.Errorf("%w (Options.NoChatTemplate loads the model without it)", err))
		}
	}
	if opts.Frozen && opts.ValueHead {
		return fail(errors.New("Options: Frozen and ValueHead cannot be combined (a frozen model trains nothing; adapters bring their own value head)"))
	}
	shards, where, err := openWeights(dir)
	if err != nil {
		return fail(err)
	}
	defer func() {
		for _, f := range shards {
			f.Close()
		}
	}()
	src := weights{where: where}
	if err := src.check(c); err != nil {
		return fail(err)
	}
	var m *model.Model
	if opts.Frozen {
		m, err = model.NewFrozen(c, src)
	} else if m, err = model.New(c, 0); err == nil {
		for _, v := range m.Layout.Views {
			if err = src.Read(v, m.Params.Slice(v.Name)); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fail(err)
	}
	return m, tok, tmpl, nil
}

// weights are the tensors of a directory's safetensors file(s), by name:
// the model.WeightSource a model is read from.
type weights struct {
	where map[string]*checkpoint.File
}

// check reports the first view of c's model the files lack (which the
// model needs) and the first tensor they hold that is no parameter.
func (w weights) check(c model.Config) error {
	l := model.NewLayout(c)
	for _, v := range l.Views {
		if _, ok := w.where[v.Name]; !ok && !valueHead(v) {
			return fmt.Errorf("missing tensor %q (config.json says the model has it)", v.Name)
		}
	}
	names := make([]string, 0, len(w.where))
	for name := range w.where {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, ok := l.Lookup(name); ok || ignored(name, c) {
			continue
		}
		return fmt.Errorf("%s: unexpected tensor %q: not a parameter of a %s model with this config.json", w.where[name].Path(), name, modelType(c))
	}
	return nil
}

// valueHead reports our value head's views, never in a Hugging Face
// checkpoint: they stay 0.
func valueHead(v model.View) bool { return strings.HasPrefix(v.Name, "value_head.") }

// BF16 reports whether the files store view v as BF16.
func (w weights) BF16(v model.View) bool {
	f, ok := w.where[v.Name]
	if !ok {
		return false
	}
	in, _ := f.Info(v.Name)
	return in.DType == "BF16"
}

// Read converts view v's tensor to float32 into dst, checking its shape.
func (w weights) Read(v model.View, dst []float32) error {
	if valueHead(v) {
		return nil
	}
	return w.where[v.Name].Load(v.Name, v.Shape, dst)
}

// ReadBF16 reads view v's BF16 tensor's bits into dst, checking its shape.
func (w weights) ReadBF16(v model.View, dst []uint16) error {
	return w.where[v.Name].LoadBF16(v.Name, v.Shape, dst)
}

// ignored reports tensors a checkpoint may hold that the model does not
// need: the rotary frequencies some Llama conversions store, and the copy
// of the embedding some tied checkpoints keep as lm_head.weight.
func ignored(name string, c model.Config) bool {
	return strings.HasSuffix(name, ".rotary_emb.inv_freq") || (name == "lm_head.weight" && c.TieWordEmbeddings)
}

func modelType(c model.Config) string {
	if c.AttentionBias {
		return "qwen2"
	}
	return "llama"
}

// openWeights opens model.safetensors, or the shards that
// model.safetensors.index.json lists, and maps every tensor name to its
// file.
func openWeights(dir string) ([]*checkpoint.File, map[string]*checkpoint.File, error) {
	index, err := os.ReadFile(filepath.Join(dir, WeightsIndexFile))
	if errors.Is(err, fs.ErrNotExist) {
		f, err := checkpoint.OpenSafetensors(filepath.Join(dir, WeightsFile))
		if err != nil {
			return nil, nil, err
		}
		where := map[string]*checkpoint.File{}
		for _, name := range f.Names() {
			where[name] = f
		}
		return []*checkpoint.File{f}, where, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(index, &idx); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", WeightsIndexFile, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, nil, fmt.Errorf("%s: weight_map: missing or empty", WeightsIndexFile)
	}
	byFile := map[string]*checkpoint.File{}
	var shards []*checkpoint.File
	closeAll := func() {
		for _, f := range shards {
			f.Close()
		}
	}
	where := map[string]*checkpoint.File{}
	names := make([]string, 0, len(idx.WeightMap))
	for name := range idx.WeightMap {
		names = append(names, name)
	}
	slices.Sort(names) // the first error is always the same
	for _, name := range names {
		file := idx.WeightMap[name]
		if file == "" || file != filepath.Base(file) || file == ".." {
			closeAll()
			return nil, nil, fmt.Errorf("%s: weight_map: tensor %q: shard %q must be a file name in the model directory", WeightsIndexFile, name, file)
		}
		f, ok := byFile[file]
		if !ok {
			if f, err = checkpoint.OpenSafetensors(filepath.Join(dir, file)); err != nil {
				closeAll()
				return nil, nil, err
			}
			byFile[file] = f
			shards = append(shards, f)
		}
		if _, ok := f.Info(name); !ok {
			closeAll()
			return nil, nil, fmt.Errorf("%s: weight_map puts tensor %q in %s, which does not hold it", WeightsIndexFile, name, file)
		}
		where[name] = f
	}
	for _, f := range shards {
		for _, name := range f.Names() {
			if where[name] != f {
				closeAll()
				return nil, nil, fmt.Errorf("%s: tensor %q is in %s but the weight_map does not put it there", WeightsIndexFile, name, filepath.Base(f.Path()))
			}
		}
	}
	return shards, where, nil
}
