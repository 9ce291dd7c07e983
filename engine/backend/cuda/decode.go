//go:build cuda

package cuda

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu"
)

// kvCache is the CUDA backend's key/value cache: per layer, S slots of
// cap positions ([S, cap, nKV·hd] for keys and for values). Reserve
// doubles S and cap as slots and sequences grow (up to maxLen positions),
// copying the cached prefixes on the device, so a model with a long
// max_position_embeddings does not reserve S·maxLen positions for rollouts
// that never get there.
type kvCache struct {
	b                       *Backend
	layers, nKV, hd, maxLen int
	S, cap                  int
	k, v                    []*buffer // per layer
	q, kk, vv, att          *buffer   // DecodeAttention's scratch
}

func (b *Backend) NewKVCache(layers, nKV, hd, maxLen int) (backend.KVCache, error) {
	if layers < 1 || nKV < 1 || hd < 1 || maxLen < 1 {
		return nil, fmt.Errorf("backend cuda: kv cache of %d layers × %d heads × %d floats × %d positions", layers, nKV, hd, maxLen)
	}
	return &kvCache{b: b, layers: layers, nKV: nKV, hd: hd, maxLen: maxLen}, nil
}

func (c *kvCache) Reserve(slot, n int) error {
	if slot < 0 || n > c.maxLen {
		return fmt.Errorf("kv cache: slot %d: %d positions (the cache holds at most %d)", slot, n, c.maxLen)
	}
	if slot < c.S && n <= c.cap {
		return nil
	}
	S, capacity := c.S, c.cap
	if slot >= S {
		S = max(2*S, slot+1, 4)
	}
	if n > capacity {
		capacity = min(max(2*capacity, n, 256), c.maxLen)
	}
	b, KV := c.b, c.nKV*c.hd
	fresh := make([]*buffer, 0, 2*c.layers)
	for range 2 * c.layers {
		x, err := b.alloc(S*capacity*KV, 4)
		if err != nil {
			for _, x := range fresh {
				b.Free(x)
			}
			return fmt.Errorf("kv cache of %d slots × %d positions: %w", S, capacity, err)
		}
		b.Zero(x)
		fresh = append(fresh, x)
	}
	for l, old := range append(append([]*buffer(nil), c.k...), c.v...) {
		for s := 0; s < c.S; s++ {
			b.Copy(b.Slice(fresh[l], s*capacity*KV, c.cap*KV), b.Slice(old, s*c.cap*KV, c.cap*KV), c.cap*KV)
		}
		b.Free(old)
	}
	c.k, c.v, c.S, c.cap = fresh[:c.layers], fresh[c.layers:], S, capacity
	return b.Err()
}

// Drop keeps the slot's memory: the next sequence in it overwrites it.
func (c *kvCache) Drop(int) {}

func (c *kvCache) Free() {
	for _, x := range append(append([]*buffer{c.q, c.kk, c.vv, c.att}, c.k...), c.v...) {
		if x != nil {
			c.b.Free(x)
		}
	}
	*c = kvCache{b: c.b}
}

// scratch makes *x hold n floats.
func (c *kvCache) scratch(x **buffer, n int) bool {
	if *x != nil && (*x).n >= n {
		return true
	}
	if *x != nil {
		c.b.Free(*x)
	}
	var err error
	if *x, err = c.b.alloc(max(n, 1), 4); err != nil {
		c.b.err = err
		return false
	}
	return true
}

// decodeRows bounds the rows one attend_cached launch runs, so that a long
// prefill does not need attention scratch (nH·cap floats a row) for every
// row at once. Every key and value is appended first, and a row reads only
// positions before its own, so the split changes nothing in the results.
const decodeRows = 512

// DecodeAttention splits qkv into contiguous q, k and v with the bias
// added (split_qkv), rotates q and k (rope), appends k and v to the cache
// (append_kv) and attends (attend_cached), in blocks of decodeRows rows.
func (b *Backend) DecodeAttention(out, qkv, bias backend.Buffer, cache backend.KVCache, layer int, seqs []backend.DecodeSeq, cos, sin backend.Buffer, nH, nKV, hd int) {
	c, ok := cache.(*kvCache)
	if !ok {
		if b.err == nil {
			b.err = fmt.Errorf("backend cuda: decode attention: a %T cache, not one of this backend", cache)
		}
		return
	}
	C, KV := nH*hd, nKV*hd
	var slots, lens, pos []int
	for _, s := range seqs {
		for j := range s.Rows {
			slots, lens, pos = append(slots, s.Slot), append(lens, s.Past+j+1), append(pos, s.Past+j)
		}
	}
	N := len(lens)
	if N == 0 || !b.need("decode_attention", N*(C+2*KV), qkv) || !b.need("decode_attention", N*C, out) ||
		!c.scratch(&c.q, N*C) || !c.scratch(&c.kk, N*KV) || !c.scratch(&c.vv, N*KV) ||
		!c.scratch(&c.att, min(N, decodeRows)*nH*c.cap) {
		return
	}
	var biasPtr devptr
	if bias != nil {
		if !b.need("decode_attention", C+2*KV, bias) {
			return
		}
		biasPtr = b.buf(bias).ptr
	}
	func() {
		defer b.enter()()
		b.grid1("split_qkv", N*(C+2*KV), c.q, c.kk, c.vv, b.buf(qkv), biasPtr, N, C, KV)
	}()
	b.RopeForward(c.q, cos, sin, pos, N, nH, hd)
	b.RopeForward(c.kk, cos, sin, pos, N, nKV, hd)
	b.appendKV(c.k[layer], c.v[layer], c.kk, c.vv, slots, lens, KV, c.cap)
	for lo := 0; lo < N; lo += decodeRows {
		hi := min(lo+decodeRows, N)
		b.attendCached(b.Slice(out, lo*C, (hi-lo)*C), c.att, b.Slice(c.q, lo*C, (hi-lo)*C), c.k[layer], c.v[layer],
			slots[lo:hi], lens[lo:hi], nH, nKV, hd, c.cap)
	}
}

// SwiGLURows is swiglu_forward on the gate and up halves of each row.
func (b *Backend) SwiGLURows(out, gateUp backend.Buffer, N, I int) {
	if !b.need("swiglu_rows", N*I, out) || !b.need("swiglu_rows", 2*N*I, gateUp) {
		return
	}
	defer b.enter()()
	b.grid1("swiglu_rows", N*I, out, gateUp, N, I)
}

// AttentionStore is nH·L² per sequence: the forward keeps the
// probabilities for the backward pass.
func (b *Backend) AttentionStore(lens []int, nH int) int { return backend.AttentionSize(lens, nH) }

// AttentionProbs recomputes one head's map on the host from the queries
// and keys downloaded (an inspection op, not on any training path), with
// the CPU's kernel.
func (b *Backend) AttentionProbs(p, q, k backend.Buffer, L, hd, ldq, ldk int) {
	hq, hk := make([]float32, (L-1)*ldq+hd), make([]float32, (L-1)*ldk+hd)
	if err := b.Download(hq, q); err != nil {
		return
	}
	if err := b.Download(hk, k); err != nil {
		return
	}
	hp := make([]float32, L*L)
	cpu.AttentionProbs(hp, hq, hk, L, hd, ldq, ldk)
	if err := b.Upload(p, hp); err != nil && b.err == nil {
		b.err = err
	}
}
