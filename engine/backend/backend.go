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
// ToBF16 writes and only GemmBF16 reads.
type Buffer interface {
	// Len is the number of values (float32, or bf16 for a bf16 buffer).
	Len() int
}

// Backend is the compute interface the engine runs on. The ops mirror the
// kernels of engine/backend/cpu (same names, same argument order: outputs,
// saved buffers, inputs, weights, dims; backward ops accumulate into
// gradients) with Buffers in place of []float32. Integer inputs (tokens,
// positions, sequence lengths, targets) stay on the host: they are small,
// and the host is where they come from.
//
// Ops do not return errors: a device backend launches them asynchronously.
// The first failure is kept and reported by Err and by every call that
// returns data to the host (Download, GradNorm, Sample), which makes later
// ops no-ops, as bufio.Writer does.
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
	// Free releases a buffer made by Alloc (not a Slice of one).
	Free(b Buffer)
	// Slice returns the n floats of b from off on, sharing b's memory.
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
	// gemm.Sgemm. Every matrix product of the engine goes through it.
	Gemm(transA, transB bool, M, N, K int, alpha float32, a Buffer, lda int, b Buffer, ldb int, beta float32, c Buffer, ldc int)
	// GemmBF16 is Gemm on bfloat16 inputs with float32 accumulation: a and
	// b are bf16 buffers (AllocBF16, ToBF16, or Slices of them), c is
	// float32. Products of bf16 values are exact in float32, so it differs
	// from Gemm on the widened inputs only in the order of the sums.
	GemmBF16(transA, transB bool, M, N, K int, alpha float32, a Buffer, lda int, b Buffer, ldb int, beta float32, c Buffer, ldc int)
	// AllocBF16 returns a zeroed buffer of n bfloat16 values (Len n). Free
	// and Slice (offsets in bf16 values) take it too.
	AllocBF16(n int) (Buffer, error)
	// ToBF16 rounds n floats of src to bf16, to nearest with ties to even
	// (RoundBF16), into the bf16 buffer dst.
	ToBF16(dst, src Buffer, n int)
	// AddBias adds bias (OC) to each of the N rows of out.
	AddBias(out, bias Buffer, N, OC int)
	// ColumnSum accumulates sum[c] += Σₙ x[n,c].
	ColumnSum(sum, x Buffer, N, C int)
	// Add is out = a + b over n floats (out may alias a).
	Add(out, a, b Buffer, n int)
	// Scale is x *= alpha over n floats.
	Scale(x Buffer, n int, alpha float32)

	// EmbeddingForward is out[t] = wte[tokens[t]] (T rows of C).
	EmbeddingForward(out Buffer, tokens []int, wte Buffer, T, C int)
	// EmbeddingBackward is dwte[tokens[t]] += dout[t].
	EmbeddingBackward(dwte, dout Buffer, tokens []int, T, C int)
	// RMSNormForward is y = x·rstd·w with rstd = 1/sqrt(mean(x²)+eps) saved.
	RMSNormForward(out, rstd, inp, weight Buffer, N, C int, eps float32)
	// RMSNormBackward accumulates dinp and dweight.
	RMSNormBackward(dinp, dweight, dout, inp, weight, rstd Buffer, N, C int)
	// RopeForward rotates x in place (rotate_half convention), row t at
	// position pos[t]; cos and sin are cpu.RopeTables uploaded.
	RopeForward(x, cos, sin Buffer, pos []int, T, nHeads, hd int)
	// RopeBackward rotates a gradient back in place.
	RopeBackward(dx, cos, sin Buffer, pos []int, T, nHeads, hd int)
	// AttentionForward is causal grouped-query attention over packed
	// sequences; att (AttentionSize(lens, nH)) is room for the
	// probabilities, for a backend that keeps them for AttentionBackward
	// (CUDA does; the CPU recomputes them and leaves att and datt unused).
	AttentionForward(out, att, q, k, v Buffer, lens []int, nH, nKV, hd int)
	// AttentionBackward accumulates dq, dk, dv; datt is scratch of
	// AttentionSize(lens, nH) floats.
	AttentionBackward(dq, dk, dv, datt, dout, att, q, k, v Buffer, lens []int, nH, nKV, hd int)
	// AppendKV writes row r of k and v (rows of KV) into the cache of slot
	// slots[r] at position lens[r]−1 (caches: [slots, maxLen, KV]).
	AppendKV(kc, vc, k, v Buffer, slots, lens []int, KV, maxLen int)
	// AttendCached is attention against the KV cache, one query row at a
	// time: row r of q ([rows, nH·hd]) against the first lens[r] keys and
	// values of slot slots[r]. Decoding runs one row per sequence; a
	// prefill runs a chunk's rows, row j of a sequence with past cached
	// tokens at lens = past+j+1, which is causal attention over the chunk.
	// att is scratch of rows·nH·maxLen floats.
	AttendCached(out, att, q, kc, vc Buffer, slots, lens []int, nH, nKV, hd, maxLen int)
	// SwiGLUForward is out = silu(gate)·up over n floats.
	SwiGLUForward(out, gate, up Buffer, n int)
	// SwiGLUBackward accumulates dgate and dup.
	SwiGLUBackward(dgate, dup, dout, gate, up Buffer, n int)
	// LogSoftmaxForward writes per row the log-sum-exp, the log-probability
	// of the target (0 where targets[n] < 0) and the entropy.
	LogSoftmaxForward(lse, logprob, entropy, logits Buffer, targets []int, N, V int)
	// LogSoftmaxBackward writes (not accumulates) the logit gradients of
	// dlogprob·logprob + dentropy·entropy; dlogits may alias logits.
	LogSoftmaxBackward(dlogits, logits, lse, entropy Buffer, targets []int, dlogprob, dentropy Buffer, N, V int)

	// AdamW applies one AdamW update to n parameters (see AdamWScalars).
	AdamW(params, m, v, grads Buffer, n int, s AdamWScalars)
	// GradNorm returns √Σg² over n floats, summed in float64 in a fixed
	// order (the same result on every run).
	GradNorm(g Buffer, n int) (float64, error)
	// Sample draws one token per row of logits (rows × V) with o, taking
	// exactly one draw from rngs[r] for row r, as sample.Sampler does.
	Sample(logits Buffer, rows, V int, o sample.Options, rngs []*sample.RNG) ([]int, error)
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

// Check says whether the backend called name can run here: "cpu" always;
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
