package cpu

import (
	"fmt"
	"sync"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/parallel"
)

// kvCache is the CPU backend's key/value cache: per slot, per layer, the
// keys (after RoPE) and values of the slot's positions, head by head. Key
// head g's keys are a block of cap rows of hd floats at k[g·cap·hd:], its
// values the same at v[g·cap·hd:], so a decoding step streams two
// contiguous blocks per head (rows of all heads interleaved made it 4×
// slower once the caches outgrew the L2, and values stored transposed, a
// short row per channel, made the attention 25% slower). Each slot grows
// on its own, so short sequences stay small.
type kvCache struct {
	layers, nKV, hd, maxLen int
	slots                   []*kvSlot

	// DecodeAttention's score scratch, kept for the cache's next step:
	// a call takes it (or, when another call running beside it holds it,
	// makes its own) and hands back the larger.
	mu  sync.Mutex
	att []float32
}

// takeAtt returns scratch of n floats, the cache's own when free.
func (c *kvCache) takeAtt(n int) []float32 {
	c.mu.Lock()
	att := c.att
	c.att = nil
	c.mu.Unlock()
	if cap(att) < n {
		att = make([]float32, n)
	}
	return att[:n]
}

// putAtt keeps att for the next step if it is larger than what the cache
// holds.
func (c *kvCache) putAtt(att []float32) {
	c.mu.Lock()
	if cap(att) > cap(c.att) {
		c.att = att
	}
	c.mu.Unlock()
}

type kvSlot struct {
	k, v [][]float32 // [layer][nKV·cap·hd]
	cap  int         // positions held
}

func (*Backend) NewKVCache(layers, nKV, hd, maxLen int) (backend.KVCache, error) {
	if layers < 1 || nKV < 1 || hd < 1 || maxLen < 1 {
		return nil, fmt.Errorf("backend cpu: kv cache of %d layers × %d heads × %d floats × %d positions", layers, nKV, hd, maxLen)
	}
	return &kvCache{layers: layers, nKV: nKV, hd: hd, maxLen: maxLen}, nil
}

func (c *kvCache) Len() int { return 0 }

// Reserve grows slot's caches to hold n positions: doubling, at least 16,
// at most maxLen.
func (c *kvCache) Reserve(slot, n int) error {
	if slot < 0 || n > c.maxLen {
		return fmt.Errorf("kv cache: slot %d: %d positions (the cache holds at most %d)", slot, n, c.maxLen)
	}
	for len(c.slots) <= slot {
		c.slots = append(c.slots, nil)
	}
	s := c.slots[slot]
	if s == nil {
		s = &kvSlot{k: make([][]float32, c.layers), v: make([][]float32, c.layers)}
		c.slots[slot] = s
	}
	if s.cap >= n {
		return nil
	}
	capacity := min(max(2*s.cap, n, 16), c.maxLen)
	hd := c.hd
	for l := range s.k {
		k, v := make([]float32, c.nKV*capacity*hd), make([]float32, c.nKV*capacity*hd)
		if s.cap > 0 {
			for g := 0; g < c.nKV; g++ {
				copy(k[g*capacity*hd:], s.k[l][g*s.cap*hd:(g+1)*s.cap*hd])
				copy(v[g*capacity*hd:], s.v[l][g*s.cap*hd:(g+1)*s.cap*hd])
			}
		}
		s.k[l], s.v[l] = k, v
	}
	s.cap = capacity
	return nil
}

// CopySlot copies the first n positions of src's keys and values, head by
// head, into dst (backend.KVCopier).
func (c *kvCache) CopySlot(dst, src, n int) error {
	if dst < 0 || src < 0 || dst >= len(c.slots) || src >= len(c.slots) || c.slots[dst] == nil || c.slots[src] == nil {
		return fmt.Errorf("kv cache: copy of slot %d into slot %d: both must be reserved", src, dst)
	}
	d, s := c.slots[dst], c.slots[src]
	if n > d.cap || n > s.cap {
		return fmt.Errorf("kv cache: copy of %d positions from slot %d (%d held) into slot %d (%d held)", n, src, s.cap, dst, d.cap)
	}
	hd := c.hd
	for l := range s.k {
		for g := 0; g < c.nKV; g++ {
			copy(d.k[l][g*d.cap*hd:g*d.cap*hd+n*hd], s.k[l][g*s.cap*hd:])
			copy(d.v[l][g*d.cap*hd:g*d.cap*hd+n*hd], s.v[l][g*s.cap*hd:])
		}
	}
	return nil
}

func (c *kvCache) Drop(slot int) {
	if slot >= 0 && slot < len(c.slots) {
		c.slots[slot] = nil
	}
}

func (c *kvCache) Free() { c.slots, c.att = nil, nil }

// DecodeAttention runs one task per (sequence, key/value head): it adds
// the bias to its rows' query heads of the group and to their key and
// value, rotates the queries in place and the keys into the cache, copies
// the values into the cache, then attends (the group's query heads read
// the same cached keys and values). Each element gets the same operations
// as in a bias pass and a RoPE loop of their own, but a decoding step (one
// row per sequence) ran that loop as a single chunk, serially, and its
// stores to the new cache rows, which miss the caches, now drain while the
// task streams the cached prefix. A sequence with one new row attends
// through AttendLast (its group's heads against the streamed cache), a
// longer chunk through AttendHead.
func (*Backend) DecodeAttention(out, qkv, bias backend.Buffer, cache backend.KVCache, layer int, seqs []backend.DecodeSeq, cos, sin backend.Buffer, nH, nKV, hd int) {
	c := cache.(*kvCache)
	o, x, b, cs, sn := h(out), h(qkv), h(bias), h(cos), h(sin)
	C, KV := nH*hd, nKV*hd
	QKV, group := C+2*KV, nH/nKV
	B := len(seqs)
	// Scratch for attention scores: a prefill needs each head's
	// AttendScratch, a single new token only AttendLast's W scores per group.
	rows, attOffs := make([]int, B), make([]int, B)
	r, a := 0, 0
	for i, s := range seqs {
		rows[i], attOffs[i] = r, a
		r += s.Rows
		if s.Rows == 1 {
			a += nKV * (s.Past + 1)
		} else {
			a += nH * AttendScratch(s.Rows, s.Past)
		}
	}
	att := c.takeAtt(a) // groups of sequences may run side by side (backend.Concurrent)
	defer c.putAtt(att)
	parallel.For(B*nKV, 1, func(_, lo, hi int) {
		for task := lo; task < hi; task++ {
			i, g := task/nKV, task%nKV
			s := seqs[i]
			n, first, slot, W := s.Rows, rows[i], c.slots[s.Slot], s.Past+s.Rows
			kc, vc := slot.k[layer][g*slot.cap*hd:], slot.v[layer][g*slot.cap*hd:]
			h0 := g * group
			for j := 0; j < n; j++ {
				r, p := first+j, s.Past+j
				row := x[r*QKV : (r+1)*QKV]
				cr, sr := cs[p*hd/2:(p+1)*hd/2], sn[p*hd/2:(p+1)*hd/2]
				q := row[h0*hd : (h0+group)*hd]
				k, v := row[C+g*hd:C+(g+1)*hd], row[C+KV+g*hd:C+KV+(g+1)*hd]
				if b != nil {
					AddInPlace(q, b[h0*hd:(h0+group)*hd])
					AddInPlace(k, b[C+g*hd:C+(g+1)*hd])
					AddInPlace(v, b[C+KV+g*hd:C+KV+(g+1)*hd])
				}
				for h := 0; h < group; h++ {
					RopeHead(q[h*hd:(h+1)*hd], q[h*hd:(h+1)*hd], cr, sr)
				}
				// The key is rotated in place, then copied: the rotation's
				// scalar stores straight into the new cache row stalled on
				// its missing lines more than the copy's few wide stores do.
				RopeHead(k, k, cr, sr)
				copy(kc[p*hd:(p+1)*hd], k)
				copy(vc[p*hd:(p+1)*hd], v)
			}
			if n == 1 {
				AttendLast(o[first*C+h0*hd:], att[attOffs[i]+g*W:], x[first*QKV+h0*hd:], kc, vc, group, W, hd, hd)
				continue
			}
			for h := h0; h < h0+group; h++ {
				sc := att[attOffs[i]+h*AttendScratch(n, s.Past):]
				AttendHead(o[first*C+h*hd:], sc, x[first*QKV+h*hd:], kc, vc, n, s.Past, hd, QKV, hd, C)
			}
		}
	})
}
