// Row reductions over the last dimension, one block per row (at most 256 threads, so several
// blocks share an SM); sums in double so the result does not depend on the block size. The LayerNorm and RMSNorm rows are T (float or bf16_t) in and out,
// statistics and math in F32/F64.

// Adaptive modulation of a normalised row r: v·(1 + scale) + shift, where the vectors of row r
// start at (r / rowsPerGroup)·groupStride (per-sample vectors broadcast over a sequence). The
// intrinsics keep the separate roundings of the unfused mul and add (no FMA contraction).
struct RowModulation {
  const float* shift;
  const float* scale;
  i64 groupStride;
  i64 rowsPerGroup;
};

__device__ __forceinline__ float modulate(const RowModulation& m, i64 row, int i, float v) {
  if (m.scale) {
    i64 at = idiv(row, m.rowsPerGroup) * m.groupStride + i;
    v = __fmul_rn(v, __fadd_rn(m.scale[at], 1.0f));
    v = __fadd_rn(v, m.shift[at]);
  }
  return v;
}

// W elements per access (1, or PACK(T) when the row length is a multiple of it and rows are
// 16-byte aligned).
template <typename T, int W>
__device__ void layer_norm(const T* x, const float* w, const float* b, RowModulation m, T* y,
                           int n, float eps) {
  const T* row = x + (i64)blockIdx.x * n;
  T* out = y + (i64)blockIdx.x * n;
  float v[W];
  double s = 0.0;
  for (int i = threadIdx.x * W; i < n; i += blockDim.x * W) {
    load_n<W>(row + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) s += v[k];
  }
  float mean = (float)(block_sum(s) / n);
  double q = 0.0;
  for (int i = threadIdx.x * W; i < n; i += blockDim.x * W) {
    load_n<W>(row + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      double d = (double)v[k] - mean;
      q += d * d;
    }
  }
  float inv = (float)(1.0 / sqrt(block_sum(q) / n + (double)eps));
  for (int i = threadIdx.x * W; i < n; i += blockDim.x * W) {
    load_n<W>(row + i, v);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      float u = (v[k] - mean) * inv;
      if (w) u *= w[i + k];
      if (b) u += b[i + k];
      v[k] = modulate(m, blockIdx.x, i + k, u);
    }
    store_n<W>(out + i, v);
  }
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
  extern "C" __global__ void rms_norm_##SUFFIX(const T* x, const float* w, T* y, int n,          \
                                               float eps) {                                      \
    rms_norm<T, 1>(x, w, y, n, eps);                                                             \
  }                                                                                              \
  extern "C" __global__ void rms_norm_packed_##SUFFIX(const T* x, const float* w, T* y, int n,   \
                                                      float eps) {                               \
    rms_norm<T, PACK(T)>(x, w, y, n, eps);                                                       \
  }
NORMS(f32, float)
NORMS(bf16, bf16_t)

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

// x viewed as [outer, n, inner]; one thread per (outer, inner) column, normalised along n.
extern "C" __global__ void l2_normalize_f32(const float* x, float* y, i64 outer, int n, i64 inner,
                                            float eps) {
  GRID_STRIDE(i, outer * inner) {
    i64 o = i / inner, c = i % inner;
    const float* p = x + o * n * inner + c;
    float* q = y + o * n * inner + c;
    double s = 0.0;
    for (int k = 0; k < n; ++k) s += (double)p[k * inner] * p[k * inner];
    float inv = (float)(1.0 / fmax(sqrt(s), (double)eps));
    for (int k = 0; k < n; ++k) q[k * inner] = p[k * inner] * inv;
  }
}
