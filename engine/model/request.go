package model

import (
	"errors"
	"fmt"
)

// CheckAppend validates a decoder's Append request before anything
// changes: a non-empty batch, one chunk per id, no id twice, token ids in
// [0, vocab), something to run for every sequence (its chunk, or tokens
// left pending by Generate), and no sequence longer than maxLen, which
// limit names in the error ("max_position_embeddings 1024"). seq reports a
// sequence's length (cached plus pending) and its pending tokens, ok false
// for a sequence the decoder does not hold yet. It returns how many
// sequences are new and how many tokens the step runs.
func CheckAppend(ids []int, chunks [][]int, vocab, maxLen int, limit string, seq func(id int) (length, pending int, ok bool)) (fresh, tokens int, err error) {
	if len(ids) == 0 {
		return 0, 0, errors.New("decoder: empty batch: no sequences")
	}
	if len(chunks) != len(ids) {
		return 0, 0, fmt.Errorf("decoder: %d ids but %d chunks", len(ids), len(chunks))
	}
	seen := make(map[int]bool, len(ids))
	for i, id := range ids {
		if seen[id] {
			return 0, 0, fmt.Errorf("decoder: sequence %d appears twice in one step", id)
		}
		seen[id] = true
		for j, t := range chunks[i] {
			if t < 0 || t >= vocab {
				return 0, 0, fmt.Errorf("decoder: sequence %d: token %d: id %d out of range [0, %d)", id, j, t, vocab)
			}
		}
		length, pending, ok := seq(id)
		if !ok {
			fresh++
		}
		add := len(chunks[i]) + pending
		if add == 0 {
			return 0, 0, fmt.Errorf("decoder: sequence %d: nothing to append (empty chunk)", id)
		}
		if n := length + len(chunks[i]); n > maxLen {
			return 0, 0, fmt.Errorf("decoder: sequence %d: length %d would exceed %s", id, n, limit)
		}
		tokens += add
	}
	return fresh, tokens, nil
}
