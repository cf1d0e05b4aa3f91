// Row reductions over the last dimension, one block per row; sums in double so the result does
// not depend on the block size.
extern "C" __global__ void layer_norm_f32(const float* x, const float* w, const float* b, float* y,
                                          int n, float eps) {
  const float* row = x + (i64)blockIdx.x * n;
  float* out = y + (i64)blockIdx.x * n;
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += row[i];
  float mean = (float)(block_sum(s) / n);
  double q = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    double d = (double)row[i] - mean;
    q += d * d;
  }
  float inv = (float)(1.0 / sqrt(block_sum(q) / n + (double)eps));
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float v = (row[i] - mean) * inv;
    if (w) v *= w[i];
    if (b) v += b[i];
    out[i] = v;
  }
}

extern "C" __global__ void rms_norm_f32(const float* x, const float* w, float* y, int n, float eps) {
  const float* row = x + (i64)blockIdx.x * n;
  float* out = y + (i64)blockIdx.x * n;
  double q = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) q += (double)row[i] * row[i];
  float inv = (float)(1.0 / sqrt(block_sum(q) / n + (double)eps));
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float v = row[i] * inv;
    out[i] = w ? v * w[i] : v;
  }
}

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
