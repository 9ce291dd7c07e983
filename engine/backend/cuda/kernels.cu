// Kernels of the CUDA backend, compiled at start by NVRTC for the device's
// compute capability (see kernels.go). Each mirrors the kernel of the same
// name in engine/backend/cpu: same buffers, same math, float32 data with
// float32 accumulation unless said otherwise. Reductions use a fixed block
// size and a fixed tree, and sums over rows (weight gradients, embedding
// scatter-add) run one thread per column over the rows in order, so every
// result is the same on every run.
//
// Launch convention (kernels.go): scalar arguments are int, float or
// double; sizes fit in int; offsets that can pass 2³¹ use size_t.

#define BLOCK 256

// NVRTC compiles without the host's <math.h>.
#define INFINITY __int_as_float(0x7f800000)

typedef unsigned short bf16;

// blockSum returns the sum of v over the block (BLOCK threads) to every
// thread; the tree order is fixed.
__device__ float blockSum(float v, float* sh) {
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] += sh[t + s];
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

__device__ double blockSumD(double v, double* sh) {
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] += sh[t + s];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

__device__ float blockMax(float v, float* sh) {
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] = fmaxf(sh[t], sh[t + s]);
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

// ---- elementwise and layout helpers ------------------------------------

extern "C" __global__ void add(float* out, const float* a, const float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

extern "C" __global__ void scale(float* x, int n, float alpha) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= alpha;
}

// add_bias: out[n, o] += bias[o] over N rows of OC.
extern "C" __global__ void add_bias(float* out, const float* bias, int N, int OC) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)N * OC) out[i] += bias[i % OC];
}

// column_sum: sum[c] += Σₙ x[n, c], rows in order (one thread per column).
extern "C" __global__ void column_sum(float* sum, const float* x, int N, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = sum[c];
    for (int n = 0; n < N; n++) s += x[(size_t)n * C + c];
    sum[c] = s;
}

// ---- embedding ---------------------------------------------------------

// embedding_forward: out[t, :] = wte[tokens[t], :].
extern "C" __global__ void embedding_forward(float* out, const int* tokens, const float* wte, int T, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * C) return;
    int t = i / C, c = i % C;
    out[i] = wte[(size_t)tokens[t] * C + c];
}

// embedding_forward_bf16: embedding_forward from a bf16 table, each
// value widened (exact).
extern "C" __global__ void embedding_forward_bf16(float* out, const int* tokens, const bf16* wte, int T, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * C) return;
    int t = i / C, c = i % C;
    out[i] = __uint_as_float((unsigned int)wte[(size_t)tokens[t] * C + c] << 16);
}

// embedding_backward: dwte[tokens[t], :] += dout[t, :]; one thread per
// column visits the tokens in order, so repeated tokens sum in the CPU's
// order with no atomics.
extern "C" __global__ void embedding_backward(float* dwte, const float* dout, const int* tokens, int T, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int t = 0; t < T; t++) dwte[(size_t)tokens[t] * C + c] += dout[(size_t)t * C + c];
}

// ---- RMSNorm -----------------------------------------------------------

// rmsnorm_forward: one block per row.  y = x·rstd·w,  rstd = 1/√(mean(x²)+eps)
extern "C" __global__ void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C, float eps) {
    __shared__ float sh[BLOCK];
    int n = blockIdx.x;
    const float* x = inp + (size_t)n * C;
    float ss = 0;
    for (int i = threadIdx.x; i < C; i += BLOCK) ss += x[i] * x[i];
    ss = blockSum(ss, sh);
    float r = rsqrtf(ss / C + eps);
    if (threadIdx.x == 0) rstd[n] = r;
    float* y = out + (size_t)n * C;
    for (int i = threadIdx.x; i < C; i += BLOCK) y[i] = x[i] * r * weight[i];
}

// rmsnorm_backward_dx: one block per row.
//   dx_i += rstd·(w_i·dy_i − x_i·rstd²·mean_j(w_j·dy_j·x_j))
extern "C" __global__ void rmsnorm_backward_dx(float* dinp, const float* dout, const float* inp, const float* weight, const float* rstd, int N, int C) {
    __shared__ float sh[BLOCK];
    int n = blockIdx.x;
    const float* x = inp + (size_t)n * C;
    const float* dy = dout + (size_t)n * C;
    float* dx = dinp + (size_t)n * C;
    float r = rstd[n];
    float dot = 0;
    for (int i = threadIdx.x; i < C; i += BLOCK) dot += weight[i] * dy[i] * x[i];
    dot = blockSum(dot, sh);
    float k = r * r * dot / C;
    for (int i = threadIdx.x; i < C; i += BLOCK) dx[i] += r * (weight[i] * dy[i] - x[i] * k);
}

// rmsnorm_backward_dw: dw_i += Σₙ dy[n,i]·x[n,i]·rstd[n], rows in order.
extern "C" __global__ void rmsnorm_backward_dw(float* dweight, const float* dout, const float* inp, const float* rstd, int N, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= C) return;
    float s = dweight[i];
    for (int n = 0; n < N; n++) s += dout[(size_t)n * C + i] * inp[(size_t)n * C + i] * rstd[n];
    dweight[i] = s;
}

// ---- RoPE --------------------------------------------------------------

// rope: rotates pairs (j, j+hd/2) of every head of row t by sign·angle(pos[t], j).
//   x₁' = x₁·cos − x₂·sin,   x₂' = x₂·cos + x₁·sin
extern "C" __global__ void rope(float* x, const float* cosT, const float* sinT, const int* pos, int T, int nHeads, int hd, float sign) {
    int half = hd / 2;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * nHeads * half) return;
    int j = i % half;
    int h = (i / half) % nHeads;
    int t = i / ((size_t)half * nHeads);
    float c = cosT[(size_t)pos[t] * half + j], s = sign * sinT[(size_t)pos[t] * half + j];
    float* row = x + (size_t)t * nHeads * hd + (size_t)h * hd;
    float a = row[j], b = row[j + half];
    row[j] = a * c - b * s;
    row[j + half] = b * c + a * s;
}

// ---- causal softmax (attention) -----------------------------------------

// softmax_causal: rows of L×L blocks (row r is query i = r mod L) hold
// scaled scores; each becomes softmax over keys 0…i, zero above. One block
// per row.
extern "C" __global__ void softmax_causal(float* att, int L, int rows) {
    __shared__ float sh[BLOCK];
    int r = blockIdx.x;
    if (r >= rows) return;
    int valid = r % L + 1;
    float* x = att + (size_t)r * L;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < valid; j += BLOCK) m = fmaxf(m, x[j]);
    m = blockMax(m, sh);
    float s = 0;
    for (int j = threadIdx.x; j < valid; j += BLOCK) {
        float e = expf(x[j] - m);
        x[j] = e;
        s += e;
    }
    s = blockSum(s, sh);
    float inv = 1 / s;
    for (int j = threadIdx.x; j < L; j += BLOCK) x[j] = j < valid ? x[j] * inv : 0;
}

// softmax_causal_backward: dS = P ⊙ (dP − rowsum(P ⊙ dP))·scale in place
// of dP, zero above the diagonal. One block per row.
extern "C" __global__ void softmax_causal_backward(float* dP, const float* P, int L, int rows, float scale) {
    __shared__ float sh[BLOCK];
    int r = blockIdx.x;
    if (r >= rows) return;
    int valid = r % L + 1;
    float* d = dP + (size_t)r * L;
    const float* p = P + (size_t)r * L;
    float dot = 0;
    for (int j = threadIdx.x; j < valid; j += BLOCK) dot += p[j] * d[j];
    dot = blockSum(dot, sh);
    for (int j = threadIdx.x; j < L; j += BLOCK) d[j] = j < valid ? p[j] * (d[j] - dot) * scale : 0;
}

// append_kv: row r of k and v goes to position lens[r]−1 of slot slots[r]'s
// cache.
extern "C" __global__ void append_kv(float* kc, float* vc, const float* k, const float* v, const int* slots, const int* lens, int R, int KV, int maxLen) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= R * KV) return;
    int r = i / KV, e = i % KV;
    size_t dst = ((size_t)slots[r] * maxLen + lens[r] - 1) * KV + e;
    kc[dst] = k[i];
    vc[dst] = v[i];
}

// attend_cached: query row r against the first lens[r] keys and values of
// slot slots[r]'s cache, one block per (row, head). q, out: [R, nH·hd];
// caches: [slots, maxLen, nKV·hd]. att is scratch of R·nH·maxLen floats.
extern "C" __global__ void attend_cached(float* out, float* att, const float* q, const float* kc, const float* vc, const int* slots, const int* lens, int nH, int nKV, int hd, int maxLen, float scl) {
    __shared__ float sh[BLOCK];
    int s = blockIdx.x / nH, h = blockIdx.x % nH, g = h / (nH / nKV);
    int L = lens[s], C = nH * hd, KV = nKV * hd;
    const float* qh = q + (size_t)s * C + (size_t)h * hd;
    const float* k = kc + (size_t)slots[s] * maxLen * KV + (size_t)g * hd;
    const float* v = vc + (size_t)slots[s] * maxLen * KV + (size_t)g * hd;
    float* a = att + ((size_t)s * nH + h) * maxLen;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < L; j += BLOCK) {
        float d = 0;
        for (int e = 0; e < hd; e++) d += qh[e] * k[(size_t)j * KV + e];
        a[j] = d * scl;
        m = fmaxf(m, a[j]);
    }
    m = blockMax(m, sh);
    float sum = 0;
    for (int j = threadIdx.x; j < L; j += BLOCK) {
        a[j] = expf(a[j] - m);
        sum += a[j];
    }
    sum = blockSum(sum, sh);
    __syncthreads(); // every a[j] written before any thread reads them all
    float inv = 1 / sum;
    for (int e = threadIdx.x; e < hd; e += BLOCK) {
        float o = 0;
        for (int j = 0; j < L; j++) o += a[j] * v[(size_t)j * KV + e];
        out[(size_t)s * C + (size_t)h * hd + e] = o * inv;
    }
}

// ---- SwiGLU ------------------------------------------------------------

// swiglu_forward: out = silu(g)·up,  silu(g) = g·σ(g).
extern "C" __global__ void swiglu_forward(float* out, const float* gate, const float* up, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = gate[i];
    out[i] = g / (1 + expf(-g)) * up[i];
}

// swiglu_backward: dup += dout·silu(g);  dgate += dout·up·σ(g)·(1 + g·(1 − σ(g))).
extern "C" __global__ void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = gate[i], s = 1 / (1 + expf(-g));
    dup[i] += dout[i] * g * s;
    dgate[i] += dout[i] * up[i] * s * (1 + g * (1 - s));
}

// ---- log-softmax + gather + entropy -------------------------------------

// logsoftmax_forward: one block per row of V logits.
//   lse = m + log Σ e_j,  e_j = exp(z_j − m);  H = log Σe − Σ e_j(z_j − m)/Σe
//   logprob = z[target] − lse (0 without a target)
extern "C" __global__ void logsoftmax_forward(float* lse, float* logprob, float* entropy, const float* logits, const int* targets, int N, int V) {
    __shared__ float sh[BLOCK];
    int n = blockIdx.x;
    const float* z = logits + (size_t)n * V;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < V; j += BLOCK) m = fmaxf(m, z[j]);
    m = blockMax(m, sh);
    float s = 0, u = 0;
    for (int j = threadIdx.x; j < V; j += BLOCK) {
        float d = z[j] - m, e = expf(d);
        s += e;
        u += e * d;
    }
    s = blockSum(s, sh);
    u = blockSum(u, sh);
    if (threadIdx.x == 0) {
        float ls = logf(s);
        lse[n] = m + ls;
        entropy[n] = ls - u / s;
        int t = targets[n];
        logprob[n] = t >= 0 ? z[t] - (m + ls) : 0;
    }
}

// logsoftmax_backward: dz_j = a·(δ_{j,t} − p_j) − b·p_j·(log p_j + H) with
// a = dlogprob (0 without a target), b = dentropy. dlogits may alias logits.
extern "C" __global__ void logsoftmax_backward(float* dlogits, const float* logits, const float* lse, const float* entropy, const int* targets, const float* dlogprob, const float* dentropy, int N, int V) {
    int nb = (V + BLOCK - 1) / BLOCK; // blocks per row; the grid is N·nb
    int n = blockIdx.x / nb;
    int j = (blockIdx.x % nb) * BLOCK + threadIdx.x;
    if (j >= V) return;
    int t = targets[n];
    float a = t >= 0 ? dlogprob[n] : 0, b = dentropy[n];
    size_t i = (size_t)n * V + j;
    if (a == 0 && b == 0) {
        dlogits[i] = 0;
        return;
    }
    float lp = logits[i] - lse[n], p = expf(lp);
    float d = -a * p - b * p * (lp + entropy[n]);
    if (j == t) d += a;
    dlogits[i] = d;
}

// ---- optimizer ---------------------------------------------------------

// adamw: PyTorch's order of operations (see backend.AdamWScalars).
extern "C" __global__ void adamw(float* p, float* m, float* v, const float* g, int n, float decay, float beta1, float omb1, float beta2, float omb2, float eps, float stepSize, float bc2Sqrt) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = g[i];
    float mi = beta1 * m[i] + omb1 * gi;
    float vi = beta2 * v[i] + omb2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float denom = sqrtf(vi) / bc2Sqrt + eps;
    p[i] = p[i] * decay - stepSize * (mi / denom);
}

// sumsq_partial: first pass of the gradient norm. Block b sums g² over
// chunk b (chunk floats) in float64 into partial[b].
extern "C" __global__ void sumsq_partial(double* partial, const float* g, int n, int chunk) {
    __shared__ double sh[BLOCK];
    size_t lo = (size_t)blockIdx.x * chunk, hi = min((size_t)n, lo + chunk);
    double s = 0;
    for (size_t i = lo + threadIdx.x; i < hi; i += BLOCK) s += (double)g[i] * g[i];
    s = blockSumD(s, sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// sum_final: second pass, one block: out[0] = Σ partial.
extern "C" __global__ void sum_final(double* out, const double* partial, int n) {
    __shared__ double sh[BLOCK];
    double s = 0;
    for (int i = threadIdx.x; i < n; i += BLOCK) s += partial[i];
    s = blockSumD(s, sh);
    if (threadIdx.x == 0) out[0] = s;
}

// ---- mixed precision ---------------------------------------------------

// f32_to_bf16: round to nearest even, NaN kept quiet.
extern "C" __global__ void f32_to_bf16(bf16* out, const float* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned int u = __float_as_uint(in[i]);
    if ((u & 0x7fffffff) > 0x7f800000) {
        out[i] = (bf16)((u >> 16) | 0x40);
        return;
    }
    u += 0x7fff + ((u >> 16) & 1);
    out[i] = (bf16)(u >> 16);
}

// bf16_to_f32: exact widening.
extern "C" __global__ void bf16_to_f32(float* out, const bf16* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __uint_as_float((unsigned int)in[i] << 16);
}

// ---- sampling ----------------------------------------------------------

// key maps a float to an unsigned int with the same order.
__device__ unsigned int key(float f) {
    unsigned int u = __float_as_uint(f);
    return (u & 0x80000000) ? ~u : (u | 0x80000000);
}

// sample_rows: one block per row, the algorithm of sample.Sampler.Sample
// with the row's uniform u drawn on the host:
//  1. x = logits/temp, NaN → −∞ (+∞ entries: uniform over them);
//  2. top-k: keep x ≥ the k-th largest value (ties kept), finite only;
//  3. p_j = exp(x_j − max) in float64 over the candidates;
//  4. top-p: keep tokens by decreasing p (ties: lower id first) while the
//     mass before them is < top_p·Σp;
//  5. inverse CDF in ascending token id: first j with Σ_{i≤j} p_i > u·Σp.
// Thresholds are found by bisection on the order-preserving bit patterns,
// so they are exact values of the row. x and p are scratch (rows × V).
extern "C" __global__ void sample_rows(int* out, const float* logits, const double* uni, float* x, double* p, int V, float temp, int topk, float topp) {
    __shared__ double shd[BLOCK];
    __shared__ float shf[BLOCK];
    __shared__ int chunkTies[BLOCK];
    __shared__ double chunkMass[BLOCK];
    int row = blockIdx.x, t = threadIdx.x;
    const float* z = logits + (size_t)row * V;
    float* xr = x + (size_t)row * V;
    double* pr = p + (size_t)row * V;
    int chunk = (V + BLOCK - 1) / BLOCK;
    int lo = min(V, t * chunk), hi = min(V, lo + chunk);

    if (!(temp > 0) || isinf(temp)) { // greedy: lowest index of the max, NaN never wins
        float best = -INFINITY;
        int bi = -1;
        for (int j = lo; j < hi; j++) {
            float v = z[j];
            if (v == v && (bi < 0 || v > best)) { best = v; bi = j; }
        }
        shd[t] = bi < 0 ? -1 : (double)bi;
        shf[t] = best;
        __syncthreads();
        if (t == 0) {
            int b = -1;
            float bv = -INFINITY;
            for (int c = 0; c < BLOCK; c++) {
                if (shd[c] >= 0 && (b < 0 || shf[c] > bv)) { b = (int)shd[c]; bv = shf[c]; }
            }
            out[row] = max(b, 0);
        }
        return;
    }

    // 1. scale
    float anyInf = 0;
    for (int j = lo; j < hi; j++) {
        float v = z[j] / temp;
        if (v != v) v = -INFINITY;
        if (isinf(v) && v > 0) anyInf = 1;
        xr[j] = v;
    }
    if (blockMax(anyInf, shf) > 0) {
        for (int j = lo; j < hi; j++) xr[j] = (isinf(xr[j]) && xr[j] > 0) ? 0 : -INFINITY;
    }
    __syncthreads();

    // 2. top-k threshold: the largest key K with count(key(x) ≥ K) ≥ k.
    unsigned int thr = key(-INFINITY);
    if (topk > 0 && topk < V) {
        unsigned long long a = 0, b = 0xffffffffull; // invariant: count(≥a) ≥ k
        while (a < b) {
            unsigned long long mid = (a + b + 1) / 2;
            float c = 0;
            for (int j = lo; j < hi; j++) c += key(xr[j]) >= mid;
            if (blockSum(c, shf) >= topk) a = mid; else b = mid - 1;
        }
        thr = (unsigned int)a;
    }

    // 3. candidates and their unnormalised probabilities
    float m = -INFINITY, n = 0;
    for (int j = lo; j < hi; j++) {
        bool cand = key(xr[j]) >= thr && !isinf(xr[j]);
        if (cand) { m = fmaxf(m, xr[j]); n++; }
        pr[j] = cand ? 1 : 0; // marks candidates until p is known
    }
    m = blockMax(m, shf);
    n = blockSum(n, shf);
    if (n == 0) {
        if (t == 0) out[row] = 0;
        return;
    }
    double zsum = 0;
    for (int j = lo; j < hi; j++) {
        pr[j] = pr[j] != 0 ? exp((double)xr[j] - (double)m) : 0;
        zsum += pr[j];
    }
    zsum = blockSumD(zsum, shd);

    // 4. top-p: tau = the smallest p value whose strictly-larger mass K is
    // < target; p > tau kept, ties at tau kept in id order while K + rank·tau < target.
    if (topp > 0 && topp < 1 && n > 1) {
        double target = (double)topp * zsum;
        unsigned long long a = 0, b = 0x3ff0000000000000ull; // bit patterns of [0, 1]
        while (a < b) { // smallest bits with mass(p > bits) < target
            unsigned long long mid = a + (b - a) / 2;
            double tau = __longlong_as_double((long long)mid), s = 0;
            for (int j = lo; j < hi; j++) if (pr[j] > tau) s += pr[j];
            if (blockSumD(s, shd) < target) b = mid; else a = mid + 1;
        }
        double tau = __longlong_as_double((long long)a), s = 0;
        int ties = 0;
        for (int j = lo; j < hi; j++) {
            if (pr[j] > tau) s += pr[j];
            if (pr[j] == tau) ties++;
        }
        double K = blockSumD(s, shd);
        chunkTies[t] = ties;
        __syncthreads();
        int rank = 0;
        for (int c = 0; c < t; c++) rank += chunkTies[c];
        for (int j = lo; j < hi; j++) {
            if (pr[j] < tau) pr[j] = 0;
            else if (pr[j] == tau) {
                if (!(K + rank * tau < target)) pr[j] = 0;
                rank++;
            }
        }
        __syncthreads();
    }

    // 5. inverse CDF in ascending id: chunk sums, then one thread walks.
    double cs = 0;
    for (int j = lo; j < hi; j++) cs += pr[j];
    chunkMass[t] = cs;
    __syncthreads();
    if (t != 0) return;
    double tot = 0;
    for (int c = 0; c < BLOCK; c++) tot += chunkMass[c];
    double target = uni[row] * tot, c = 0;
    int last = 0;
    for (int k = 0; k < BLOCK; k++) {
        if (chunkMass[k] == 0) continue;
        if (c + chunkMass[k] <= target) { // the draw lies past this chunk
            c += chunkMass[k];
            int klo = min(V, k * chunk), khi = min(V, klo + chunk);
            for (int j = khi - 1; j >= klo; j--) if (pr[j] > 0) { last = j; break; }
            continue;
        }
        int klo = min(V, k * chunk), khi = min(V, klo + chunk);
        for (int j = klo; j < khi; j++) {
            if (pr[j] == 0) continue;
            c += pr[j];
            last = j;
            if (target < c) { out[row] = j; return; }
        }
    }
    out[row] = last; // u·Σp rounded up to Σp: the last token with mass
}

// swiglu_rows: swiglu_forward on rows of gate|up ([N, 2I]) into out [N, I].
extern "C" __global__ void swiglu_rows(float* out, const float* gateUp, int N, int I) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N * I) return;
    int r = i / I, j = i - r * I;
    float g = gateUp[r * 2 * I + j];
    out[i] = g / (1 + expf(-g)) * gateUp[r * 2 * I + I + j];
}

// split_qkv: rows of q|k|v ([N, C+2KV]) plus bias (C+2KV; null: none) into
// contiguous q [N, C], k [N, KV] and v [N, KV].
extern "C" __global__ void split_qkv(float* q, float* k, float* v, const float* qkv, const float* bias, int N, int C, int KV) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int W = C + 2 * KV;
    if (i >= N * W) return;
    int r = i / W, j = i - r * W;
    float x = qkv[i];
    if (bias) x += bias[j];
    if (j < C) q[r * C + j] = x;
    else if (j < C + KV) k[r * KV + j - C] = x;
    else v[r * KV + j - C - KV] = x;
}
