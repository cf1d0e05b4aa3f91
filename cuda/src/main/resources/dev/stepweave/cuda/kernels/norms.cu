// Row reductions over the last dimension, one block per row (at most 256 threads, so several
// blocks share an SM); sums in double so the result does not depend on the block size. The
// LayerNorm and RMSNorm rows are T (float or bf16_t) in and out, statistics and math in F32/F64.

// Adaptive modulation of a normalised row r: v·(1 + scale) + shift, where the vectors of row r
// start at (r / rowsPerGroup)·groupStride (per-sample vectors broadcast over a sequence). The
// intrinsics keep the separate roundings of the unfused mul and add (no FMA contraction).
struct RowModulation {
  const float* shift;
  const float* scale;
  i64 groupStride;
  i64 rowsPerGroup;
};

// Where row r's modulation vectors start (null when the row is not modulated).
__device__ __forceinline__ i64 modulation_base(const RowModulation& m, i64 row) {
  return m.scale ? idiv(row, m.rowsPerGroup) * m.groupStride : 0;
}

// The second pass of a layer norm: row (mean, inv) normalised, times w and plus b where given,
// modulated where m has vectors (base: where row's start), stored as T. The modulation keeps the
// separate roundings of the unfused mul and add (no FMA contraction).
template <typename T, int W>
__device__ void normalize_row(const T* row, const float* w, const float* b, RowModulation m,
                              i64 base, T* out, int n, float mean, float inv) {
  float v[W], scale[W], shift[W];
  for (int i = threadIdx.x * W; i < n; i += blockDim.x * W) {
    load_n<W>(row + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] = (v[k] - mean) * inv;
    if (w) {
      load_floats<W>(w + i, scale);
#pragma unroll
      for (int k = 0; k < W; ++k) v[k] *= scale[k];
    }
    if (b) {
      load_floats<W>(b + i, shift);
#pragma unroll
      for (int k = 0; k < W; ++k) v[k] += shift[k];
    }
    if (m.scale) {
      load_floats<W>(m.scale + base + i, scale);
      load_floats<W>(m.shift + base + i, shift);
#pragma unroll
      for (int k = 0; k < W; ++k) {
        v[k] = __fadd_rn(__fmul_rn(v[k], __fadd_rn(scale[k], 1.0f)), shift[k]);
      }
    }
    store_n<W>(out + i, v);
  }
}

// Mean and 1/sqrt(variance + eps) of a row from its block's sums of x and x² (in double: one
// block reduction instead of two, and E[x²] − mean² exact enough for any F32 row).
__device__ __forceinline__ void row_statistics(double s, double q, int n, float eps, float& mean,
                                               float& inv) {
  block_sum2(s, q);
  double mean64 = s / n;
  mean = (float)mean64;
  inv = (float)(1.0 / sqrt(fmax(q / n - mean64 * mean64, 0.0) + (double)eps));
}

// W elements per access (1, or PACK(T) when the row length is a multiple of it and rows are
// 16-byte aligned).
template <typename T, int W>
__device__ void layer_norm(const T* x, const float* w, const float* b, RowModulation m, T* y,
                           int n, float eps) {
  const T* row = x + (i64)blockIdx.x * n;
  float v[W];
  double s = 0.0, q = 0.0;
  for (int i = threadIdx.x * W; i < n; i += blockDim.x * W) {
    load_n<W>(row + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      s += v[k];
      q += (double)v[k] * v[k];
    }
  }
  float mean, inv;
  row_statistics(s, q, n, eps, mean, inv);
  normalize_row<T, W>(row, w, b, m, modulation_base(m, blockIdx.x), y + (i64)blockIdx.x * n, n,
                      mean, inv);
}

// A value as stored in T and read back: what a norm of the stored row sees.
__device__ __forceinline__ float as_stored(float v, const float*) { return v; }
__device__ __forceinline__ float as_stored(float v, const bf16_t*) {
  return __uint_as_float(bf16_bits(v) << 16);
}

// A residual update and the layer norm of its result in one pass over the stream: r = x + y·gate
// (x + y without a gate), stored, then layer_norm of r as stored — the same values, sums and
// order as gated_residual (or add) followed by layer_norm. The gate of row r starts where its
// modulation vectors would (m's groupStride and rowsPerGroup; set for the gate alone when m has no
// vectors).
template <typename T, int W>
__device__ void residual_layer_norm(const T* x, const T* y, const float* gate, const float* w,
                                    const float* b, RowModulation m, T* r, T* out, int n,
                                    float eps) {
  i64 offset = (i64)blockIdx.x * n;
  i64 base = idiv(blockIdx.x, m.rowsPerGroup) * m.groupStride;
  float v[W], u[W], g[W];
  double s = 0.0, q = 0.0;
  for (int i = threadIdx.x * W; i < n; i += blockDim.x * W) {
    load_n<W>(x + offset + i, v);
    load_n<W>(y + offset + i, u);
    if (gate) {
      load_floats<W>(gate + base + i, g);
#pragma unroll
      for (int k = 0; k < W; ++k) v[k] = __fadd_rn(v[k], __fmul_rn(u[k], g[k]));
    } else {
#pragma unroll
      for (int k = 0; k < W; ++k) v[k] = __fadd_rn(v[k], u[k]);
    }
    store_n<W>(r + offset + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      float stored = as_stored(v[k], r);
      s += stored;
      q += (double)stored * stored;
    }
  }
  float mean, inv;
  row_statistics(s, q, n, eps, mean, inv);
  // Each thread reads back only the elements it stored above.
  normalize_row<T, W>(r + offset, w, b, m, modulation_base(m, blockIdx.x), out + offset, n, mean,
                      inv);
}

template <typename T, int W>
__device__ void rms_norm(const T* x, const float* w, T* y, int n, float eps) {
  const T* row = x + (i64)blockIdx.x * n;
  T* out = y + (i64)blockIdx.x * n;
  float v[W];
  double q = 0.0;
  for (int i = threadIdx.x * W; i < n; i += blockDim.x * W) {
    load_n<W>(row + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) q += (double)v[k] * v[k];
  }
  float inv = (float)(1.0 / sqrt(block_sum(q) / n + (double)eps));
  for (int i = threadIdx.x * W; i < n; i += blockDim.x * W) {
    load_n<W>(row + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      float u = v[k] * inv;
      v[k] = w ? u * w[i + k] : u;
    }
    store_n<W>(out + i, v);
  }
}

// rms_norm over a row of n = H·D, then RoPE on its (even, odd) pairs with row r's position
// l = r mod L: W elements (W/2 pairs, never straddling a head) per access.
template <typename T, int W>
__device__ void rms_norm_rope(const T* x, const float* w, const float* cs, const float* sn, T* y,
                              int n, int L, int half, float eps) {
  const T* row = x + (i64)blockIdx.x * n;
  T* out = y + (i64)blockIdx.x * n;
  const float* c = cs + (i64)(blockIdx.x % L) * half;
  const float* s = sn + (i64)(blockIdx.x % L) * half;
  float v[W];
  double q = 0.0;
  for (int i = threadIdx.x * W; i < n; i += blockDim.x * W) {
    load_n<W>(row + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) q += (double)v[k] * v[k];
  }
  float inv = (float)(1.0 / sqrt(block_sum(q) / n + (double)eps));
  for (int i = threadIdx.x * W; i < n; i += blockDim.x * W) {
    load_n<W>(row + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] *= inv;
    if (w) {
      float wp[W];
      load_floats<W>(w + i, wp);
#pragma unroll
      for (int k = 0; k < W; ++k) v[k] *= wp[k];
    }
    int p = (i / 2) % half;
    float cp[W / 2], sp[W / 2];
    load_floats<W / 2>(c + p, cp);
    load_floats<W / 2>(s + p, sp);
#pragma unroll
    for (int j = 0; j < W / 2; ++j) {
      float a = v[2 * j], b = v[2 * j + 1];
      v[2 * j] = a * cp[j] - b * sp[j];
      v[2 * j + 1] = a * sp[j] + b * cp[j];
    }
    store_n<W>(out + i, v);
  }
}

#define NORMS(SUFFIX, T)                                                                         \
  extern "C" __global__ void layer_norm_##SUFFIX(const T* x, const float* w, const float* b,     \
                                                 RowModulation m, T* y, int n, float eps) {      \
    layer_norm<T, 1>(x, w, b, m, y, n, eps);                                                     \
  }                                                                                              \
  extern "C" __global__ void layer_norm_packed_##SUFFIX(const T* x, const float* w,              \
                                                        const float* b, RowModulation m, T* y,   \
                                                        int n, float eps) {                      \
    layer_norm<T, PACK(T)>(x, w, b, m, y, n, eps);                                               \
  }                                                                                              \
  extern "C" __global__ void residual_layer_norm_##SUFFIX(                                       \
      const T* x, const T* y, const float* gate, const float* w, const float* b, RowModulation m, \
      T* r, T* out, int n, float eps) {                                                          \
    residual_layer_norm<T, 1>(x, y, gate, w, b, m, r, out, n, eps);                              \
  }                                                                                              \
  extern "C" __global__ void residual_layer_norm_packed_##SUFFIX(                                \
      const T* x, const T* y, const float* gate, const float* w, const float* b, RowModulation m, \
      T* r, T* out, int n, float eps) {                                                          \
    residual_layer_norm<T, PACK(T)>(x, y, gate, w, b, m, r, out, n, eps);                        \
  }                                                                                              \
  extern "C" __global__ void rms_norm_##SUFFIX(const T* x, const float* w, T* y, int n,          \
                                               float eps) {                                      \
    rms_norm<T, 1>(x, w, y, n, eps);                                                             \
  }                                                                                              \
  extern "C" __global__ void rms_norm_packed_##SUFFIX(const T* x, const float* w, T* y, int n,   \
                                                      float eps) {                               \
    rms_norm<T, PACK(T)>(x, w, y, n, eps);                                                       \
  }                                                                                              \
  extern "C" __global__ void rms_norm_rope_##SUFFIX(const T* x, const float* w, const float* cs, \
                                                    const float* sn, T* y, int n, int L,         \
                                                    int half, float eps) {                       \
    rms_norm_rope<T, 2>(x, w, cs, sn, y, n, L, half, eps);                                       \
  }                                                                                              \
  extern "C" __global__ void rms_norm_rope_packed_##SUFFIX(                                      \
      const T* x, const float* w, const float* cs, const float* sn, T* y, int n, int L,          \
      int half, float eps) {                                                                     \
    rms_norm_rope<T, PACK(T)>(x, w, cs, sn, y, n, L, half, eps);                                 \
  }
NORMS(f32, float)
NORMS(bf16, bf16_t)

// The backward of a norm over the last dimension, one block per row (Backend.layerNormBackward,
// rmsNormBackward): x (T) and the output's gradient g (F32) of row blockIdx.x give dx (F32) where
// dx is given and g·x̂ — the weight's gradient before its sum over the rows — where gx is given.
// The row statistics are recomputed from x, and every sum is in double.

// LayerNorm: x̂ = (x − μ)·r, ĝ = g·w (w may be null), dx = r·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)).
template <typename T>
__device__ void layer_norm_backward(const T* x, const float* g, const float* w, float* dx,
                                    float* gx, int n, float eps) {
  i64 at = (i64)blockIdx.x * n;
  x += at;
  g += at;
  double s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += load_f(x + i);
  float mean = (float)(block_sum(s) / n);
  double q = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    double c = load_f(x + i) - mean;
    q += c * c;
  }
  float r = (float)(1.0 / sqrt(block_sum(q) / n + (double)eps));
  double sg = 0, sgx = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float gh = w ? g[i] * w[i] : g[i];
    sg += gh;
    sgx += (double)gh * ((load_f(x + i) - mean) * r);
  }
  block_sum2(sg, sgx);
  float meanG = (float)(sg / n), meanGx = (float)(sgx / n);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float xhat = (load_f(x + i) - mean) * r;
    if (dx) {
      float gh = w ? g[i] * w[i] : g[i];
      dx[at + i] = r * (gh - meanG - xhat * meanGx);
    }
    if (gx) gx[at + i] = g[i] * xhat;
  }
}

// RMSNorm: r = 1/√(mean(x²) + eps), ĝ = g·w (w may be null), dx = r·ĝ − x·r³·mean(ĝ·x).
template <typename T>
__device__ void rms_norm_backward(const T* x, const float* g, const float* w, float* dx,
                                  float* gx, int n, float eps) {
  i64 at = (i64)blockIdx.x * n;
  x += at;
  g += at;
  double q = 0, d = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    double xi = load_f(x + i);
    q += xi * xi;
    d += (double)(w ? g[i] * w[i] : g[i]) * xi;
  }
  block_sum2(q, d);
  double r64 = 1.0 / sqrt(q / n + (double)eps);
  float r = (float)r64, along = (float)(d / n * r64 * r64 * r64);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float xi = load_f(x + i);
    if (dx) dx[at + i] = (w ? g[i] * w[i] : g[i]) * r - xi * along;
    if (gx) gx[at + i] = g[i] * (xi * r);
  }
}

#define NORM_BACKWARDS(SUFFIX, T)                                                              \
  extern "C" __global__ void layer_norm_backward_##SUFFIX(const T* x, const float* g,          \
                                                          const float* w, float* dx, float* gx, \
                                                          int n, float eps) {                   \
    layer_norm_backward<T>(x, g, w, dx, gx, n, eps);                                           \
  }                                                                                            \
  extern "C" __global__ void rms_norm_backward_##SUFFIX(const T* x, const float* g,            \
                                                        const float* w, float* dx, float* gx,   \
                                                        int n, float eps) {                     \
    rms_norm_backward<T>(x, g, w, dx, gx, n, eps);                                             \
  }
NORM_BACKWARDS(f32, float)
NORM_BACKWARDS(bf16, bf16_t)

extern "C" __global__ void softmax_f32(const float* x, float* y, int n) {
  const float* row = x + (i64)blockIdx.x * n;
  float* out = y + (i64)blockIdx.x * n;
  float m = NEG_INF;
  for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, row[i]);
  m = block_max(m);
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += expf(row[i] - m);
  float inv = (float)(1.0 / block_sum(s));
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = expf(row[i] - m) * inv;
}

extern "C" __global__ void sum_last_f32(const float* x, float* y, int n) {
  const float* row = x + (i64)blockIdx.x * n;
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += row[i];
  s = block_sum(s);
  if (threadIdx.x == 0) y[blockIdx.x] = (float)s;
}

// x viewed as [outer, n, inner]; one thread per (outer, inner) column, normalised along n, then
// (the Wan VAE's channel norm) times gamma[k] when gamma is given, then SiLU when silu is set. For
// an F32 result, the same float operations, in the same order, as l2Normalize, mul and silu one
// after another (the sum in double), so it equals that composition; a BF16 result is computed in
// float and rounded once. y's
// element (o, k, c) is at o * yOuter + k * yChannel + c: the dense layout, or the later frames of a
// longer tensor whose first frames hold a causal convolution's remembered input.
// Input and output types may differ: an F32 stream normalised straight into the BF16 input of the
// convolution that reads it (rounded once, at the store).
template <typename TI, typename TO>
__device__ void channel_norm(const TI* x, const float* gamma, TO* y, i64 outer, int n, i64 inner,
                             i64 yOuter, i64 yChannel, float eps, int silu) {
  GRID_STRIDE(i, outer * inner) {
    i64 o = i / inner, c = i % inner;
    const TI* p = x + o * n * inner + c;
    TO* q = y + o * yOuter + c;
    if constexpr (sizeof(TO) == sizeof(float)) {
      double s = 0.0;
      for (int k = 0; k < n; ++k) {
        float v = load_f(p + k * inner);
        s += (double)v * v;
      }
      float inv = (float)(1.0 / fmax(sqrt(s), (double)eps));
      for (int k = 0; k < n; ++k) {
        float v = load_f(p + k * inner) * inv;
        if (gamma != nullptr) v = v * gamma[k];
        if (silu) v = v * (float)(1.0 / (1.0 + exp(-(double)v)));
        store_f(q + k * yChannel, v);
      }
    } else {
      // A BF16 result keeps 8 bits: float sums and a fast exponential change it by a rounding at
      // most, where the double arithmetic above made this kernel bound by FP64 throughput (a
      // fifth of the memory bandwidth at the 720p Wan2.2 decode's full-resolution shapes).
      float s = 0.0f;
      for (int k = 0; k < n; ++k) {
        float v = load_f(p + k * inner);
        s = fmaf(v, v, s);
      }
      float inv = 1.0f / fmaxf(sqrtf(s), eps);
      for (int k = 0; k < n; ++k) {
        float v = load_f(p + k * inner) * inv;
        if (gamma != nullptr) v = v * gamma[k];
        if (silu) v = v / (1.0f + __expf(-v));
        store_f(q + k * yChannel, v);
      }
    }
  }
}
#define CHANNEL_NORM(NAME, TI, TO)                                                           \
  extern "C" __global__ void NAME(const TI* x, const float* gamma, TO* y, i64 outer, int n,    \
                                  i64 inner, i64 yOuter, i64 yChannel, float eps, int silu) { \
    channel_norm<TI, TO>(x, gamma, y, outer, n, inner, yOuter, yChannel, eps, silu);          \
  }
CHANNEL_NORM(channel_norm_f32, float, float)
CHANNEL_NORM(channel_norm_bf16, bf16_t, bf16_t)
CHANNEL_NORM(channel_norm_f32_bf16, float, bf16_t)
CHANNEL_NORM(channel_norm_bf16_f32, bf16_t, float)
