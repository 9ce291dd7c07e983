package backend

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ragen-go/ragen/engine/sample"
)

// Buffer is a float32 array owned by a backend: host memory for "cpu",
// device memory for "cuda". Buffers are only ever passed back to the
// backend that made them. AllocBF16 makes bfloat16 arrays, which only
// ToBF16 writes and only the products (GemmBF16, GemmBF16B, a Packer's
// product of bf16 weights), FromBF16 and EmbeddingForward read.
type Buffer interface {
	// Len is the number of values (float32, or bf16 for a bf16 buffer).
	Len() int
}

// BF16Buffer is implemented by every backend's bf16 buffers (AllocBF16's
// and their Slices): a model whose frozen weights are held as bf16 only
// tells its weights' kind by it (IsBF16).
type BF16Buffer interface {
	Buffer
	BF16()
}

// IsBF16 reports whether b holds bfloat16 values (a BF16Buffer).
func IsBF16(b Buffer) bool {
	_, ok := b.(BF16Buffer)
	return ok
}

// HostBuffer is a Buffer whose values live in host memory as float32: the
// CPU backend's. Floats returns them without a copy, so code that needs
// the values on the host (checkpoints, optimizer state) reads them in
// place there and downloads them elsewhere (see HostFloats).
type HostBuffer interface {
	Buffer
	Floats() []float32
}

// HostMemory is implemented by a backend that computes on host memory
// (the CPU): Wrap makes a buffer of x itself, without a copy, so a model's
// host parameters are the very floats the backend updates.
type HostMemory interface {
	Wrap(x []float32) Buffer
}

// HostFloats returns the values of b when they live in host memory (a
// HostBuffer), nil and false otherwise.
func HostFloats(b Buffer) ([]float32, bool) {
	if h, ok := b.(HostBuffer); ok {
		return h.Floats(), true
	}
	return nil, false
}

// Backend is the compute interface the engine runs on: engine/model, the
// one transformer, is written against it, and engine/optim drives its
// AdamW and gradient-norm ops. The ops are the transformer's kernels, llm.c
// style (argument order: outputs, saved buffers, inputs, weights, dims;
// backward ops accumulate into gradients), on Buffers. Integer inputs
// (tokens, positions, sequence lengths, targets) stay on the host: they
// are small, and the host is where they come from.
//
// Ops do not return errors: a device backend launches them asynchronously.
// The first failure is kept and reported by Err and by every call that
// returns data to the host (Download, GradNorm, Sample), which makes later
// ops no-ops, as bufio.Writer does.
//
// A backend may also implement Packer, an optional interface for products
// by weights packed once for decoding.
type Backend interface {
	// Name is the registered name ("cpu", "cuda").
	Name() string
	// Err returns the first error of any op so far.
	Err() error
	// Close frees everything the backend holds; the backend is unusable
	// afterwards.
	Close() error

	// Alloc returns a zeroed buffer of n floats.
	Alloc(n int) (Buffer, error)
	// Free releases a buffer made by Alloc, AllocBF16 or a Packer (not a
	// Slice of one).
	Free(b Buffer)
	// Slice returns the n values of b from off on, sharing b's memory.
	Slice(b Buffer, off, n int) Buffer
	// Upload copies src into the start of dst.
	Upload(dst Buffer, src []float32) error
	// Download copies the start of src into dst, after every queued op.
	Download(dst []float32, src Buffer) error
	// Copy copies the first n floats of src into dst, on the backend.
	Copy(dst, src Buffer, n int)
	// Zero sets every value of b to 0.
	Zero(b Buffer)

	// Gemm is C = alpha·op(A)·op(B) + beta·C on row-major matrices with
	// leading dimensions, op(X) = Xᵀ when trans is set: the contract of
	// gemm.Sgemm. Every matrix product of the engine goes through it (or
	// GemmBF16, or a Packer).
	Gemm(transA, transB bool, M, N, K int, alpha float32, a Buffer, lda int, b Buffer, ldb int, beta float32, c Buffer, ldc int)
	// GemmBF16 is Gemm on bfloat16 inputs with float32 accumulation: a and
	// b are bf16 buffers (AllocBF16, ToBF16, or Slices of them), c is
	// float32. Products of bf16 values are exact in float32, so it differs
	// from Gemm on the widened inputs only in the order of the sums.
	GemmBF16(transA, transB bool, M, N, K int, alpha float32, a Buffer, lda int, b Buffer, ldb int, beta float32, c Buffer, ldc int)
	// GemmBF16B is Gemm with a float32 a and a bf16 b (the weights of a
	// float32 product held as bf16 only, decision 44): bit for bit Gemm on
	// the widened b, whose values are exact in float32.
	GemmBF16B(transA, transB bool, M, N, K int, alpha float32, a Buffer, lda int, b Buffer, ldb int, beta float32, c Buffer, ldc int)
	// AllocBF16 returns a zeroed buffer of n bfloat16 values (Len n). Free
	// and Slice (offsets in bf16 values) take it too.
	AllocBF16(n int) (Buffer, error)
	// FromBF16 widens n bf16 values of src into the float32 buffer dst
	// (exact).
	FromBF16(dst, src Buffer, n int)
	// ToBF16 rounds n floats of src to bf16, to nearest with ties to even
	// (RoundBF16), into the bf16 buffer dst.
	ToBF16(dst, src Buffer, n int)
	// AddBias adds bias (OC) to each of the N rows of out.
	AddBias(out, bias Buffer, N, OC int)
	// ColumnSum accumulates sum[c] += Σₙ x[n,c].
	ColumnSum(sum, x Buffer, N, C int)
	// Add is out = a + b over n floats (out may alias a or b).
	Add(out, a, b Buffer, n int)
	// Scale is x *= alpha over n floats.
	Scale(x Buffer, n int, alpha float32)

	// EmbeddingForward is out[t] = wte[tokens[t]] (T rows of C): a row
	// gather, which the decoder also uses to pick rows of its hidden states.
	// wte may be a bf16 buffer (a frozen embedding held as bf16 only,
	// decision 44), whose rows are widened as they are gathered (exact).
	EmbeddingForward(out Buffer, tokens []int, wte Buffer, T, C int)
	// EmbeddingBackward is dwte[tokens[t]] += dout[t].
	EmbeddingBackward(dwte, dout Buffer, tokens []int, T, C int)
	// RMSNormForward is y = x·rstd·w with rstd = 1/sqrt(mean(x²)+eps) saved.
	RMSNormForward(out, rstd, inp, weight Buffer, N, C int, eps float32)
	// RMSNormBackward accumulates dinp and dweight.
	RMSNormBackward(dinp, dweight, dout, inp, weight, rstd Buffer, N, C int)
	// RopeForward rotates x in place (rotate_half convention), row t at
	// position pos[t]; cos and sin are RopeTables uploaded.
	RopeForward(x, cos, sin Buffer, pos []int, T, nHeads, hd int)
	// RopeBackward rotates a gradient back in place.
	RopeBackward(dx, cos, sin Buffer, pos []int, T, nHeads, hd int)
	// AttentionStore is the number of floats AttentionForward keeps per
	// layer for AttentionBackward over sequences of lens (the att and datt
	// arguments): nH·L² per sequence for a backend that stores the
	// probabilities (CUDA), 0 for one that recomputes them in the backward
	// pass (the CPU, decision 27).
	AttentionStore(lens []int, nH int) int
	// AttentionForward is causal grouped-query attention over packed
	// sequences; att holds AttentionStore(lens, nH) floats.
	AttentionForward(out, att, q, k, v Buffer, lens []int, nH, nKV, hd int)
	// AttentionBackward accumulates dq, dk, dv; datt is scratch of
	// AttentionStore(lens, nH) floats.
	AttentionBackward(dq, dk, dv, datt, dout, att, q, k, v Buffer, lens []int, nH, nKV, hd int)
	// AttentionProbs writes the L×L causal attention probabilities of one
	// head of one sequence into p: q and k are the sequence's first rows
	// of that head (after RoPE; row strides ldq and ldk).
	AttentionProbs(p, q, k Buffer, L, hd, ldq, ldk int)
	// SwiGLUForward is out = silu(gate)·up over n floats.
	SwiGLUForward(out, gate, up Buffer, n int)
	// SwiGLURows is SwiGLUForward on N rows of gate|up ([N, 2·I], each
	// row its I gate values then its I up values) into out [N, I]: the
	// decoder's fused gate/up product.
	SwiGLURows(out, gateUp Buffer, N, I int)
	// SwiGLUBackward accumulates dgate and dup.
	SwiGLUBackward(dgate, dup, dout, gate, up Buffer, n int)
	// LogSoftmaxForward writes per row the log-sum-exp, the log-probability
	// of the target (0 where targets[n] < 0) and the entropy.
	LogSoftmaxForward(lse, logprob, entropy, logits Buffer, targets []int, N, V int)
	// LogSoftmaxBackward writes (not accumulates) the logit gradients of
	// dlogprob·logprob + dentropy·entropy; dlogits may alias logits.
	LogSoftmaxBackward(dlogits, logits, lse, entropy Buffer, targets []int, dlogprob, dentropy Buffer, N, V int)

	// NewKVCache returns an empty key/value cache for decoding: layers
	// layers of nKV heads of hd floats per position, sequences of at most
	// maxLen positions, in the backend's own layout. Free releases it.
	NewKVCache(layers, nKV, hd, maxLen int) (KVCache, error)
	// DecodeAttention is one layer's attention for the new rows of
	// decoding sequences, fused: qkv holds one row per new token ([N,
	// C+2·KV]: the token's query heads, then its key and its value, C =
	// nH·hd, KV = nKV·hd), the rows of seqs[0] first, then those of
	// seqs[1], ... For each row it adds bias (C+2·KV; nil: none), rotates
	// the query and the key at the row's position (Past + its index among
	// its sequence's rows) with cos and sin, appends the key and the value
	// to the sequence's cache in layer, and attends causally over the
	// cached positions, writing out [N, C]. qkv is scratch afterwards. The
	// cache must hold room for the rows (KVCache.Reserve).
	DecodeAttention(out, qkv, bias Buffer, cache KVCache, layer int, seqs []DecodeSeq, cos, sin Buffer, nH, nKV, hd int)

	// AdamW applies one AdamW update to n parameters (see AdamWScalars).
	AdamW(params, m, v, grads Buffer, n int, s AdamWScalars)
	// GradNorm returns √Σg² over n floats, summed in float64 in a fixed
	// order (the same result on every run).
	GradNorm(g Buffer, n int) (float64, error)
	// Sample draws one token per row of logits (rows × V) with o, taking
	// exactly one draw from rngs[r] for row r, as sample.Sampler does; rows
	// that share an RNG draw from it in row order.
	Sample(logits Buffer, rows, V int, o sample.Options, rngs []*sample.RNG) ([]int, error)
}

// DecodeSeq is one sequence's part of a DecodeAttention: its cache slot,
// the positions already cached, and its new rows.
type DecodeSeq struct {
	Slot, Past, Rows int
}

// KVCache holds the keys and values of decoding sequences, each in a slot
// (a small integer the decoder assigns), in the layout of the backend
// that made it.
type KVCache interface {
	// Reserve makes slot hold at least n positions, keeping what it has
	// cached (a new slot starts empty). A backend may reserve more.
	Reserve(slot, n int) error
	// Drop empties slot and releases what only it held.
	Drop(slot int)
	// Free releases the cache.
	Free()
}

// KVCopier is implemented by a KV cache that copies a slot's cached
// positions into another: a decoder then runs a prompt that several new
// sequences share once, and copies its keys and values to the others.
type KVCopier interface {
	// CopySlot sets the first n positions of slot dst (reserved for them)
	// to those of slot src.
	CopySlot(dst, src, n int) error
}

// Concurrent is implemented by a backend whose operations may run from
// several goroutines at once on disjoint outputs and caches (the CPU's): a
// decoding step of a small model then runs groups of its sequences side by
// side, each operation on one core, instead of splitting every small
// operation across the cores (model.Decoder).
type Concurrent interface{ Concurrent() }

// PrefixAttention is implemented by a backend whose attention lets a
// sequence read the keys and values of its first positions from rows that
// another sequence of the batch computed: a model's forward pass then runs
// a prefix that several sequences share (a GRPO group's prompt) once. Such
// a backend keeps no probabilities for the backward pass
// (AttentionStore is 0): it runs on activations copied out to the
// batch's rows.
type PrefixAttention interface {
	// PrefixAlign is the multiple of positions a shared prefix must be
	// for AttentionForwardPrefixed to give a sequence's rows the floats
	// AttentionForward gives them in the whole sequence.
	PrefixAlign() int
	// AttentionForwardPrefixed is AttentionForward (with no att kept for
	// a backward pass) where sequence s's lens[s] rows of q and out are
	// positions past[s] … past[s]+lens[s]−1, and its keys and values at
	// positions 0 … past[s]+lens[s]−1 are the rows keyRows[o : o+past[s]+
	// lens[s]] of k and v, with o = Σ_{s'<s} past[s']+lens[s'].
	AttentionForwardPrefixed(out, q, k, v Buffer, lens, past, keyRows []int, nH, nKV, hd int)
}

// Packer is implemented by a backend whose products run faster on weights
// packed once, as decoding runs them at every step on a few rows. The
// decoder packs its weights at creation when the backend is a Packer, and
// runs plain Gemms (GemmBF16 at bf16) on the weights otherwise; the
// results are the same floats.
type Packer interface {
	// PackLinear packs the weights of each group of linear layers that
	// share their input (q|k|v, gate|up, a single matrix), as one matrix
	// whose product computes their outputs side by side. Free releases
	// each packed buffer.
	PackLinear(groups []LinearGroup) ([]Buffer, error)
	// PackedLinear is out[N, Σouts] = x[N, in] · [weights...]ᵀ with a
	// packed group: every output summed as Gemm sums it. x is bf16 when
	// the weights were.
	PackedLinear(out, x, packed Buffer, N int)
}

// LinearGroup is linear layers that share their input: Weights[i] is a
// torch-layout weight [Outs[i], In] (bf16 buffers at bf16).
type LinearGroup struct {
	Weights []Buffer
	Outs    []int
	In      int
	// BF16Inputs: the products' inputs are bf16 buffers too (a model at
	// BF16 precision), so a backend may pack bf16 weights for products of
	// two bf16 operands (the CPU's VDPBF16PS panels, decision 53). The
	// results are the same floats either way.
	BF16Inputs bool
}

// AdamWScalars are the per-update constants of the AdamW kernel, computed
// on the host in float64 and rounded to float32 as PyTorch does
// (optim.AdamW computes them). For each parameter θ with gradient g:
//
//	m ← β1·m + (1−β1)·g,   v ← β2·v + (1−β2)·g²
//	θ ← θ·Decay − StepSize · m / (√v/Bc2Sqrt + ε)
type AdamWScalars struct {
	Decay, Beta1, OneMinusBeta1, Beta2, OneMinusBeta2, Eps, StepSize, Bc2Sqrt float32
}

// AttentionSize is the number of floats att needs: nH·L² per sequence.
func AttentionSize(lens []int, nH int) int {
	n := 0
	for _, L := range lens {
		n += nH * L * L
	}
	return n
}

var (
	mu       sync.Mutex
	registry = map[string]func() (Backend, error){}
	checks   = map[string]func() error{}
)

// Register makes a backend available under name; open makes a new instance,
// check says cheaply whether one can be made here. Implementations call it
// from init.
func Register(name string, open func() (Backend, error), check func() error) {
	mu.Lock()
	defer mu.Unlock()
	registry[name] = open
	checks[name] = check
}

// Names lists the selectable backends, sorted ("cuda" is always listed:
// selecting it in a build without CUDA gives the error that says how to
// rebuild).
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	names := []string{"cuda"}
	for n := range registry {
		if n != "cuda" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// Check says whether the backend called name can run here: "cpu" always
// (in a binary that imports engine/backend/cpu, as engine/model does);
// "cuda" only in a binary built with -tags cuda on a machine with a CUDA
// device. The error says what is missing.
func Check(name string) error {
	mu.Lock()
	check, ok := checks[name]
	mu.Unlock()
	if ok {
		return check()
	}
	if name == "cuda" {
		return errNoCUDABuild
	}
	return fmt.Errorf("backend %q: unknown (valid: %s)", name, strings.Join(Names(), ", "))
}

// errNoCUDABuild is Check("cuda") in a binary built without the cuda tag.
var errNoCUDABuild = fmt.Errorf("backend cuda: this binary was built without CUDA support; rebuild with: go build -tags cuda ./cmd/ragen (needs the CUDA toolkit headers and libraries)")

// Open checks and returns a new instance of the backend called name.
func Open(name string) (Backend, error) {
	if err := Check(name); err != nil {
		return nil, err
	}
	mu.Lock()
	open := registry[name]
	mu.Unlock()
	return open()
}

// CheckSample validates the arguments of Sample; every backend starts
// with it.
func CheckSample(logits Buffer, rows, V int, o sample.Options, rngs []*sample.RNG) error {
	switch {
	case V <= 0 || rows < 0:
		return fmt.Errorf("sample: bad shape %d rows × %d tokens", rows, V)
	case logits.Len() < rows*V:
		return fmt.Errorf("sample: %d rows × %d tokens but the logits hold %d floats", rows, V, logits.Len())
	case len(rngs) != rows:
		return fmt.Errorf("sample: %d random streams for %d rows", len(rngs), rows)
	}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	return nil
}
