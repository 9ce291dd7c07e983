package model

import (
	"errors"
	"fmt"

	"github.com/ragen-go/ragen/engine/backend/cpu/parallel"
	"github.com/ragen-go/ragen/engine/sample"
)

// sampleGrain is about the logits per chunk of Generate's parallel
// sampling (a row costs ~20 ns per vocabulary entry: 512 entries, 10 µs).
const sampleGrain = 2048

// Request is one sequence's part in a Generate call.
type Request struct {
	ID     int         // sequence in the decoder; created if new
	Prompt []int       // tokens appended before generating: a prompt, or an environment reply; may be empty for a sequence with a pending token
	RNG    *sample.RNG // the sequence's own random stream (may be nil for greedy decoding)
}

// GenerateOptions bound a Generate call.
type GenerateOptions struct {
	Sample sample.Options  // temperature, top-k, top-p (zero value: greedy)
	MaxNew int             // most tokens generated per sequence, ≥ 1
	Stop   *sample.Stopper // ends a sequence when its generated tokens end with a stop sequence; nil: only MaxNew
}

// Generate appends each request's prompt, then samples tokens for all the
// requests' sequences in batched steps until each has produced a stop
// sequence, MaxNew tokens, or reached max_position_embeddings. It returns
// the generated tokens per request (stop sequence included).
//
// A sequence's tokens depend only on its own history, options and RNG
// stream (one draw per token), never on the other sequences of the batch or
// on GOMAXPROCS. The last generated token of each sequence is kept pending
// in the decoder: the next Append or Generate on that sequence runs it
// before the new chunk, so the conversation continues without a gap.
func (d *Decoder) Generate(reqs []Request, o GenerateOptions) ([][]int, error) {
	if err := o.Sample.Validate(); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	if o.MaxNew < 1 {
		return nil, fmt.Errorf("generate: max_new_tokens: must be ≥ 1 (got %d)", o.MaxNew)
	}
	if len(reqs) == 0 {
		return nil, errors.New("generate: empty batch: no requests")
	}
	ids, chunks := make([]int, len(reqs)), make([][]int, len(reqs))
	for i, r := range reqs {
		if r.RNG == nil && o.Sample.Temperature > 0 {
			return nil, fmt.Errorf("generate: sequence %d: sampling at temperature %g needs an RNG", r.ID, o.Sample.Temperature)
		}
		if n := d.Len(r.ID) + len(r.Prompt); n >= d.m.Config.MaxPositions {
			return nil, fmt.Errorf("generate: sequence %d: length %d leaves no room to generate within max_position_embeddings %d", r.ID, n, d.m.Config.MaxPositions)
		}
		ids[i], chunks[i] = r.ID, r.Prompt
	}
	logits, err := d.append(ids, chunks, o.MaxNew)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	V := d.m.Config.VocabSize
	out := make([][]int, len(reqs))
	live := make([]int, len(reqs)) // request index of each row of logits
	for i := range live {
		live[i] = i
	}
	// The rows are sampled in parallel, each with its request's RNG and a
	// sampler (scratch only) per chunk: a sequence's token depends on its
	// logits and its RNG alone. Requests that share an RNG would draw from
	// it in row order, so they are sampled serially.
	grain := max(1, sampleGrain/V)
	if sharedRNG(reqs) {
		grain = len(reqs)
	}
	samplers := make([]sample.Sampler, parallel.Chunks(len(reqs), grain))
	toks := make([]int, len(reqs))
	for len(live) > 0 {
		parallel.For(len(live), grain, func(chunk, lo, hi int) {
			for row := lo; row < hi; row++ {
				toks[row] = samplers[chunk].Sample(logits[row*V:(row+1)*V], o.Sample, reqs[live[row]].RNG)
			}
		})
		next := live[:0]
		ids, chunks = ids[:0], chunks[:0]
		for row, i := range live {
			tok := toks[row]
			out[i] = append(out[i], tok)
			s := d.seqs[reqs[i].ID]
			if o.Stop.Match(out[i]) || len(out[i]) >= o.MaxNew || s.n+1 >= d.m.Config.MaxPositions {
				s.pending = append(s.pending, tok)
				continue
			}
			next = append(next, i)
			ids, chunks = append(ids, reqs[i].ID), append(chunks, toks[row:row+1:row+1])
		}
		live = next
		if len(live) == 0 {
			break
		}
		if logits, err = d.Append(ids, chunks); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
	}
	return out, nil
}

// sharedRNG reports whether two requests use the same RNG.
func sharedRNG(reqs []Request) bool {
	seen := make(map[*sample.RNG]bool, len(reqs))
	for _, r := range reqs {
		if r.RNG == nil {
			continue
		}
		if seen[r.RNG] {
			return true
		}
		seen[r.RNG] = true
	}
	return false
}
