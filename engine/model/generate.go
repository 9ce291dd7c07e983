package model

import (
	"errors"
	"fmt"

	"github.com/ragen-go/ragen/engine/sample"
)

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
	var rngs []*sample.RNG
	for len(live) > 0 {
		// One draw per row from its request's RNG (Backend.Sample): a
		// sequence's token depends on its logits and its RNG alone.
		rngs = rngs[:0]
		for _, i := range live {
			rngs = append(rngs, reqs[i].RNG)
		}
		toks, err := d.m.b.Sample(logits, len(live), V, o.Sample, rngs)
		if err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
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
		if logits, err = d.append(ids, chunks, 0); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
	}
	return out, nil
}
