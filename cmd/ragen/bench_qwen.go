package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/model"
)

// qwenPreset is the bench's row at the scale RAGEN trains: a model of
// Qwen2.5-0.5B's shape (hf.Qwen05BConfig) with random weights made here.
const qwenPreset = "qwen2.5-0.5b"

// qwenLoRA is the adapter setting of the LoRA row: rank 16 on every
// linear layer (8.8M trained numbers), PEFT's usual alpha 2 × rank.
var qwenLoRA = model.LoRA{Rank: 16, Alpha: 32, Targets: []string{"all-linear"}}

// qwenWork is the preset's training batch: b sequences of t tokens, one
// step per round (a step takes seconds). Decoding is the other presets':
// benchB sequences, a benchPrompt-token prompt, o.newTokens new tokens.
type qwenWork struct{ b, t int }

func qwenWorkload(quick bool) qwenWork {
	if quick {
		return qwenWork{2, 64}
	}
	return qwenWork{4, 128}
}

// newQwenModel is the preset's model: random weights rounded to bf16, as a
// bf16 checkpoint's (Qwen2.5's) are, so that the decoder packs bf16 panels
// and a LoRA base keeps bf16 only (decision 44).
func newQwenModel() (*model.Model, error) {
	m, err := model.New(hf.Qwen05BConfig(), 1)
	if err != nil {
		return nil, err
	}
	for i, v := range m.Params.Data {
		m.Params.Data[i] = backend.RoundBF16(v)
	}
	return m, nil
}

// newQwenFrozen is the preset's model as a bf16 checkpoint loads to
// decode, or to be a LoRA run's base (hf.Load with Frozen,
// model.NewFrozen): its matrices and embedding in bf16 only, no float32
// copy.
func newQwenFrozen() (*model.Model, error) {
	m, err := newQwenModel()
	if err != nil {
		return nil, err
	}
	return model.NewFrozen(m.Config, bf16Source{m})
}

// bf16Source gives the parameters of a model whose values are all
// bf16-exact as a bf16 checkpoint gives them (model.WeightSource).
type bf16Source struct{ m *model.Model }

func (bf16Source) BF16(model.View) bool { return true }

func (s bf16Source) Read(v model.View, dst []float32) error {
	copy(dst, s.m.Params.Slice(v.Name))
	return nil
}

func (s bf16Source) ReadBF16(v model.View, dst []uint16) error {
	for i, f := range s.m.Params.Slice(v.Name) {
		dst[i] = uint16(math.Float32bits(f) >> 16)
	}
	return nil
}

// benchQwen runs the preset's rows, each on a fresh model and with its
// own peak memory on each side:
//
//	decode  ours (bf16 weights only, read where stored) against PyTorch in float32,
//	        and ours at BF16 precision against PyTorch in bfloat16,
//	        alternating round by round
//	lora    forward + backward + AdamW of rank-16 adapters on the frozen
//	        base, alternating with PyTorch's frozen float32 base + A/B
//	full    forward + backward + AdamW of all 494M parameters: ours, then
//	        PyTorch's, not alternated — each needs ~10 GB (weights,
//	        gradients, two moments of 2 GB each, activations), and both at
//	        once would not fit beside other work in 24 GB
func benchQwen(o benchOpts) ([]benchRow, error) {
	c := hf.Qwen05BConfig()
	w := qwenWorkload(o.quick)
	o.rounds = o.qwenRounds
	fmt.Printf("%s: %d parameters (random, bf16-exact); decode %d sequences, %d-token prompt, %d new tokens; train %d × %d tokens, 1 step a round, LoRA rank %d alpha %g on all linear layers, full: AdamW on everything (ours, then PyTorch's); %d rounds, best-of and median\n",
		qwenPreset, model.NewLayout(c).Size, benchB, benchPrompt, o.newTokens, w.b, w.t, qwenLoRA.Rank, qwenLoRA.Alpha, o.rounds)
	var rows []benchRow
	if slices.Contains(o.qwenRows, "decode") {
		decode, err := benchQwenDecode(c, o)
		if err != nil {
			return nil, err
		}
		rows = append(rows, decode...)
	}
	for _, name := range []string{"lora", "full"} {
		if !slices.Contains(o.qwenRows, name) {
			continue
		}
		row, err := benchQwenTrain(c, w, name == "lora", o)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// qwenRowNames are the rows of the qwen2.5-0.5b preset (-qwen-rows).
var qwenRowNames = []string{"decode", "lora", "full"}

// benchQwenDecode alternates our decoding with PyTorch's float32 and
// bfloat16 peers, ours at the matching precision: F32 (float32
// activations by the bf16 weights widened, the numbers of float32
// weights) against PyTorch's float32, BF16 (activations rounded to bf16
// too, as PyTorch's bfloat16 model computes; the VDPBF16PS panels where
// the CPU has them, decision 53) against its bfloat16. Ours is the model
// as a bf16 checkpoint loads to decode (newQwenFrozen: bf16 weights
// only, as PyTorch's bfloat16 model holds them), switched to the row's
// precision; each row's peak is the largest of its own decodes.
func benchQwenDecode(c model.Config, o benchOpts) ([]benchRow, error) {
	m, err := newQwenFrozen()
	if err != nil {
		return nil, err
	}
	var peers []*torchPeer
	rows := []benchRow{{name: "decode " + qwenPreset + " (torch f32)"}, {name: "decode " + qwenPreset + " at bf16 (torch bf16)"}}
	precisions := []backend.Precision{backend.F32, backend.BF16}
	if !o.skipTorch {
		for _, dtype := range []string{"float32", "bfloat16"} {
			p, err := startPeer(c, qwenPreset, peerSpec{batch: 1, seq: 1, extra: []string{"--dtype", dtype}}, o)
			if err != nil {
				return nil, err
			}
			defer p.close()
			peers = append(peers, p)
		}
	}
	for r := range o.rounds {
		for i, prec := range precisions {
			if err := m.Use(m.Backend(), prec); err != nil {
				return nil, err
			}
			resetPeakRSS()
			rate, err := decodeBench(m, o.newTokens, uint64(r))
			if err != nil {
				return nil, err
			}
			rows[i].ours = append(rows[i].ours, rate)
			rows[i].oursKB = max(rows[i].oursKB, maxRSSKB())
			if peers == nil {
				continue
			}
			res, err := peers[i].do(map[string]any{"op": "decode", "batch": benchB, "prompt": benchPrompt, "new": o.newTokens})
			if err != nil {
				return nil, err
			}
			rows[i].theirs = append(rows[i].theirs, mean(res.TokS))
			rows[i].thKB = res.MaxRSSKB
		}
		fmt.Fprintf(os.Stderr, "  %s decode round %d/%d done\n", qwenPreset, r+1, o.rounds)
	}
	for i := range rows {
		rows[i].theirsMissing = peers == nil
	}
	return rows, nil
}

// benchQwenTrain is the lora row (lora set) or the full row. The lora
// row alternates with its peer; the full row runs ours, frees it, then
// the peer's.
func benchQwenTrain(c model.Config, w qwenWork, lora bool, o benchOpts) (benchRow, error) {
	row := benchRow{name: "full " + qwenPreset, theirsMissing: o.skipTorch}
	spec := peerSpec{batch: w.b, seq: w.t}
	if lora {
		row.name = "lora " + qwenPreset
		spec.extra = []string{"--lora-rank", strconv.Itoa(qwenLoRA.Rank), "--lora-alpha", strconv.FormatFloat(qwenLoRA.Alpha, 'g', -1, 64)}
	}
	m, err := newQwenModel()
	if err != nil {
		return row, err
	}
	if lora {
		if m, err = m.WithLoRA(qwenLoRA, false, 1); err != nil { // the base keeps bf16 only
			return row, err
		}
	}
	tr, err := newTrainBench(m, w.b, w.t)
	if err != nil {
		return row, err
	}
	resetPeakRSS()
	if _, err := tr.steps(1); err != nil { // warm-up: buffers and the optimizer's moments
		return row, err
	}
	var peer *torchPeer
	startPeerNow := func() error {
		if o.skipTorch {
			return nil
		}
		if peer, err = startPeer(c, qwenPreset, spec, o); err != nil {
			return err
		}
		_, err := peer.do(map[string]any{"op": "train", "steps": 1})
		return err
	}
	if lora {
		if err := startPeerNow(); err != nil {
			return row, err
		}
		if peer != nil {
			defer peer.close()
		}
	}
	for r := range o.rounds {
		rate, err := tr.steps(1)
		if err != nil {
			return row, err
		}
		row.ours = append(row.ours, rate)
		if lora && peer != nil {
			if err := row.peerStep(peer); err != nil {
				return row, err
			}
		}
		fmt.Fprintf(os.Stderr, "  %s round %d/%d done\n", row.name, r+1, o.rounds)
	}
	row.oursKB = maxRSSKB()
	if lora {
		return row, nil
	}
	// tr and m are dead from here: resetPeakRSS's collection frees them
	// before the peer builds its model.
	resetPeakRSS()
	if err := startPeerNow(); err != nil {
		return row, err
	}
	if peer == nil {
		return row, nil
	}
	defer peer.close()
	for r := range o.rounds {
		if err := row.peerStep(peer); err != nil {
			return row, err
		}
		fmt.Fprintf(os.Stderr, "  %s (PyTorch) round %d/%d done\n", row.name, r+1, o.rounds)
	}
	return row, nil
}

// peerStep times one training step of the peer into the row.
func (r *benchRow) peerStep(p *torchPeer) error {
	res, err := p.do(map[string]any{"op": "train", "steps": 1})
	if err != nil {
		return err
	}
	r.theirs = append(r.theirs, mean(res.TokS))
	r.thKB = res.MaxRSSKB
	return nil
}
