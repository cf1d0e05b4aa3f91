// Elementwise maps over contiguous tensors, broadcasting binary ops over strided views and the
// gated residual update; T (float or bf16_t) in and out, math in F32.
// Op codes match CudaBackend's: Backend.UnaryOp ordinals, then the extra maps below.
#define OP_GELU_ERF 20
#define OP_GELU_TANH 21
#define OP_SILU 22
#define OP_AFFINE 23
#define OP_CLAMP 24

__device__ __forceinline__ float unary_op(int op, float x, float a, float b) {
  switch (op) {
    case 0: return -x;
    case 1: return expf(x);
    case 2: return tanhf(x);
    case 3: return sqrtf(x);
    case 4: return 1.0f / sqrtf(x);
    case 5: return sinf(x);
    case 6: return cosf(x);
    case 7: return x > 0.0f ? x : 0.0f;
    case 8: return (float)(1.0 / (1.0 + exp(-(double)x)));
    case 9: return fabsf(x);
    case 10: return x * x;
    case OP_GELU_ERF: return (float)(0.5 * (double)x * erfc(-(double)x * 0.7071067811865476));
    case OP_GELU_TANH: {
      double u = 0.7978845608028654 * ((double)x + 0.044715 * (double)x * x * x);
      return (float)((double)x / (1.0 + exp(-2.0 * u)));
    }
    case OP_SILU: return x * (float)(1.0 / (1.0 + exp(-(double)x)));
    case OP_AFFINE: return x * a + b;
    case OP_CLAMP: return fminf(fmaxf(x, a), b);
  }
  return __int_as_float(0x7fc00000);
}

template <typename T>
__device__ void unary(const T* x, T* y, i64 n, int op, float a, float b) {
  GRID_STRIDE(i, n) { store_f(y + i, unary_op(op, load_f(x + i), a, b)); }
}

// out is contiguous; s0 and s1 are a's and b's strides broadcast to out's shape.
__device__ __forceinline__ float binary_op(int op, float u, float v) {
  switch (op) {
    case 0: return u + v;
    case 1: return u - v;
    case 2: return u * v;
    case 3: return u / v;
    case 4: return (u != u || v != v) ? u + v : fmaxf(u, v);
    default: return (u != u || v != v) ? u + v : fminf(u, v);
  }
}

template <typename T>
__device__ void binary(const T* a, const T* b, T* y, const Index8& ix, i64 n, int op) {
  GRID_STRIDE(i, n) {
    i64 oa, ob, unused;
    offsets(ix, i, oa, ob, unused);
    store_f(y + i, binary_op(op, load_f(a + oa), load_f(b + ob)));
  }
}

// Dense operands of one shape, n a multiple of PACK(T), 16-byte aligned: one pack per step.
template <typename T>
__device__ void binary_packed(const T* a, const T* b, T* y, i64 n, int op) {
  constexpr int N = PACK(T);
  float u[N], v[N];
  GRID_STRIDE(j, n / N) {
    load_pack(a + j * N, u);
    load_pack(b + j * N, v);
#pragma unroll
    for (int k = 0; k < N; ++k) u[k] = binary_op(op, u[k], v[k]);
    store_pack(y + j * N, u);
  }
}

// One dense operand of out's shape and one that repeats a dense block of `period` elements along
// the leading dims (a bias or a learned table broadcast over batch and sequence), n and period
// multiples of PACK(T), 16-byte aligned: one pack per step, the repeated block indexed modulo its
// period instead of through the eight-dim index of `binary`. periodicB: which operand repeats.
template <typename T>
__device__ void binary_periodic(const T* a, const T* b, T* y, i64 n, i64 period, int periodicB,
                                int op) {
  constexpr int N = PACK(T);
  float u[N], v[N];
  GRID_STRIDE(j, n / N) {
    i64 e = j * N;
    i64 p = e % period;
    load_pack(a + (periodicB ? e : p), u);
    load_pack(b + (periodicB ? p : e), v);
#pragma unroll
    for (int k = 0; k < N; ++k) u[k] = binary_op(op, u[k], v[k]);
    store_pack(y + e, u);
  }
}

// A dense operand d and an expanded view e (stride 0 along some dims: a nearest upsampling, a
// repeat) into dense y of d's layout. One thread per value of e: its offsets once (own: e's and
// y's strides over e's own dims), then that value against each of its replicas' d (rep: y's
// offsets of the replicas) — the index arithmetic of one element spread over all its replicas.
template <typename T>
__device__ void binary_expanded(const T* d, const T* e, T* y, const Index8& own,
                                const Replicas64& rep, i64 values, int replicas, int dFirst,
                                int op) {
  GRID_STRIDE(j, values) {
    i64 oe, oy, unused;
    offsets(own, j, oe, oy, unused);
    float v = load_f(e + oe);
    for (int r = 0; r < replicas; ++r) {
      i64 o = oy + rep.o[r];
      float u = load_f(d + o);
      store_f(y + o, dFirst ? binary_op(op, u, v) : binary_op(op, v, u));
    }
  }
}

// A BF16 and an F32 operand of one shape, dense, into F32: a BF16 convolution's result added to
// an F32 residual stream without first converting it (the conversion is exact either way, so the
// result equals the F32 op's bit for bit). n a multiple of 8, pointers 16-byte aligned: one BF16
// pack and two F32 packs per step. bf16First: whether the BF16 operand is a (the ops need not
// commute).
__device__ void binary_mixed_packed(const bf16_t* h, const float* f, float* y, i64 n,
                                    int bf16First, int op) {
  float u[8], v[8];
  GRID_STRIDE(j, n / 8) {
    i64 e = j * 8;
    load_pack(h + e, u);
    load_pack(f + e, v);
    load_pack(f + e + 4, v + 4);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      u[k] = bf16First ? binary_op(op, u[k], v[k]) : binary_op(op, v[k], u[k]);
    }
    store_pack(y + e, u);
    store_pack(y + e + 4, u + 4);
  }
}

extern "C" __global__ void binary_mixed_packed_bf16_f32(const bf16_t* h, const float* f, float* y,
                                                        i64 n, int bf16First, int op) {
  binary_mixed_packed(h, f, y, n, bf16First, op);
}

// x + y·gate per row; W elements per access (PACK(T) when n is a multiple of it, pointers
// 16-byte aligned). The intrinsics keep the separate roundings of the unfused mul and add.
template <typename T, int W>
__device__ void gated_residual(const T* x, const T* y, const float* gate, T* out, i64 rows, int n,
                               i64 groupStride, i64 rowsPerGroup) {
  float a[W], b[W];
  GRID_STRIDE(j, rows * n / W) {
    i64 i = j * W;
    const float* g = gate + idiv(idiv(i, n), rowsPerGroup) * groupStride + imod(i, n);
    load_n<W>(x + i, a);
    load_n<W>(y + i, b);
#pragma unroll
    for (int k = 0; k < W; ++k) a[k] = __fadd_rn(a[k], __fmul_rn(b[k], g[k]));
    store_n<W>(out + i, a);
  }
}

#define ELEMENTWISE(SUFFIX, T)                                                                  \
  extern "C" __global__ void unary_##SUFFIX(const T* x, T* y, i64 n, int op, float a, float b) { \
    unary<T>(x, y, n, op, a, b);                                                                \
  }                                                                                             \
  extern "C" __global__ void binary_##SUFFIX(const T* a, const T* b, T* y, Index8 ix, i64 n,     \
                                             int op) {                                          \
    binary<T>(a, b, y, ix, n, op);                                                              \
  }                                                                                             \
  extern "C" __global__ void binary_packed_##SUFFIX(const T* a, const T* b, T* y, i64 n,        \
                                                    int op) {                                   \
    binary_packed<T>(a, b, y, n, op);                                                           \
  }                                                                                             \
  extern "C" __global__ void binary_periodic_##SUFFIX(const T* a, const T* b, T* y, i64 n,      \
                                                      i64 period, int periodicB, int op) {      \
    binary_periodic<T>(a, b, y, n, period, periodicB, op);                                      \
  }                                                                                             \
  extern "C" __global__ void binary_expanded_##SUFFIX(const T* d, const T* e, T* y, Index8 own,   \
                                                      Replicas64 rep, i64 values, int replicas, \
                                                      int dFirst, int op) {                     \
    binary_expanded<T>(d, e, y, own, rep, values, replicas, dFirst, op);                        \
  }                                                                                             \
  extern "C" __global__ void gated_residual_##SUFFIX(const T* x, const T* y, const float* gate, \
                                                     T* out, i64 rows, int n, i64 groupStride,  \
                                                     i64 rowsPerGroup) {                        \
    gated_residual<T, 1>(x, y, gate, out, rows, n, groupStride, rowsPerGroup);                  \
  }                                                                                             \
  extern "C" __global__ void gated_residual_packed_##SUFFIX(                                    \
      const T* x, const T* y, const float* gate, T* out, i64 rows, int n, i64 groupStride,      \
      i64 rowsPerGroup) {                                                                       \
    gated_residual<T, PACK(T)>(x, y, gate, out, rows, n, groupStride, rowsPerGroup);            \
  }
ELEMENTWISE(f32, float)
ELEMENTWISE(bf16, bf16_t)

// The tanh GELU's backward (Backend.geluTanhBackward): t = tanh(k·(x + c·x³)),
// dx = g·(½(1 + t) + x·(1 − t²)·(½k + 3/2·c·k·x²)), in float, one pass.
template <typename T>
__device__ void gelu_tanh_backward(const float* g, const T* x, float* dx, i64 n, float k,
                                   float c) {
  GRID_STRIDE(i, n) {
    float xi = load_f(x + i);
    float x2 = xi * xi;
    float t = tanhf(k * xi * (1.0f + c * x2));
    float slope = xi * (1.0f - t * t) * (0.5f * k + 1.5f * c * k * x2);
    dx[i] = g[i] * (0.5f * t + 0.5f + slope);
  }
}
extern "C" __global__ void gelu_tanh_backward_f32(const float* g, const float* x, float* dx, i64 n,
                                                  float k, float c) {
  gelu_tanh_backward<float>(g, x, dx, n, k, c);
}
extern "C" __global__ void gelu_tanh_backward_bf16(const float* g, const bf16_t* x, float* dx,
                                                   i64 n, float k, float c) {
  gelu_tanh_backward<bf16_t>(g, x, dx, n, k, c);
}

// One element of an AdamW step in place (Backend.adamw): every operation rounded to float on its
// own (the _rn intrinsics, so the compiler fuses no multiply-add), in the order the CPU's loop runs
// them — the CPU's bits.
__device__ __forceinline__ void adamw_element(float* p, float gi, float* m, float* v, i64 i,
                                              float shrink, float stepSize, float b1c, float b2,
                                              float b2c, float bias2Sqrt, float eps) {
  float value = __fmul_rn(p[i], shrink);
  float mi = __fadd_rn(m[i], __fmul_rn(b1c, __fsub_rn(gi, m[i])));
  float vi = __fadd_rn(__fmul_rn(v[i], b2), __fmul_rn(__fmul_rn(b2c, gi), gi));
  float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bias2Sqrt), eps);
  p[i] = __fsub_rn(value, __fmul_rn(stepSize, __fdiv_rn(mi, denom)));
  m[i] = mi;
  v[i] = vi;
}

// Multi-tensor launches: a table of up to MULTI_TENSORS tensors passed by value (every thread reads
// one constant bank), each cut into MULTI_CHUNK-element chunks, one block a chunk; first[t] is the
// block that starts tensor t and first[count] the grid's size.
#define MULTI_TENSORS 48
#define MULTI_CHUNK 4096

struct AdamWTable {
  float* p[MULTI_TENSORS];
  const float* g[MULTI_TENSORS];
  float* m[MULTI_TENSORS];
  float* v[MULTI_TENSORS];
  i64 n[MULTI_TENSORS];
  int first[MULTI_TENSORS + 1];
  int count;
};

struct SquaresTable {
  const float* x[MULTI_TENSORS];
  i64 n[MULTI_TENSORS];
  int first[MULTI_TENSORS + 1];
  int count;
};

// The tensor whose chunks block b falls in: the last t with first[t] <= b (tensors without
// elements start where the next one does, so they are never chosen).
__device__ __forceinline__ int multi_tensor_of(const int* first, int count, int b) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) >> 1;
    if (first[mid] <= b) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Backend.adamw of a table's tensors, each gradient element first multiplied by gradScale (a
// clipping's coefficient; 1 changes no bit).
extern "C" __global__ void adamw_multi_f32(AdamWTable t, float gradScale, float shrink,
                                           float stepSize, float b1c, float b2, float b2c,
                                           float bias2Sqrt, float eps) {
  int k = multi_tensor_of(t.first, t.count, blockIdx.x);
  i64 start = (i64)(blockIdx.x - t.first[k]) * MULTI_CHUNK;
  i64 end = min(t.n[k], start + MULTI_CHUNK);
  const float* g = t.g[k];
  for (i64 i = start + threadIdx.x; i < end; i += blockDim.x) {
    adamw_element(t.p[k], __fmul_rn(g[i], gradScale), t.m[k], t.v[k], i, shrink, stepSize, b1c,
                  b2, b2c, bias2Sqrt, eps);
  }
}

// Σ x² of each chunk of a table's tensors, in double, into partials[block] (Backend.sumsOfSquares'
// first pass; the order of every sum is fixed, so the result is the same each run).
extern "C" __global__ void squares_partial_f32(SquaresTable t, double* partials) {
  int k = multi_tensor_of(t.first, t.count, blockIdx.x);
  i64 start = (i64)(blockIdx.x - t.first[k]) * MULTI_CHUNK;
  i64 end = min(t.n[k], start + MULTI_CHUNK);
  const float* x = t.x[k];
  double s = 0;
  for (i64 i = start + threadIdx.x; i < end; i += blockDim.x) {
    double xi = x[i];
    s += xi * xi;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// The second pass: block k sums tensor k's partials in order and writes out[k] as float.
extern "C" __global__ void squares_total_f32(SquaresTable t, const double* partials, float* out) {
  int k = blockIdx.x;
  double s = 0;
  for (int b = t.first[k] + threadIdx.x; b < t.first[k + 1]; b += blockDim.x) s += partials[b];
  s = block_sum(s);
  if (threadIdx.x == 0) out[k] = (float)s;
}
