// Rotary embedding, embedding lookup and im2col for conv3d.

// x, y [B, L, H, D] contiguous, T (float or bf16_t); cos, sin [L, D/2] F32; one thread per
// interleaved pair.
// W elements (W/2 pairs) per access; PACK(T) when D/2 is a multiple of PACK(T)/2 and the
// tensors are 16-byte aligned.
template <typename T, int W>
__device__ void rope(const T* x, const float* cs, const float* sn, T* y, i64 pairs, int L, int H,
                     int half) {
  constexpr int P = W == 1 ? 1 : W / 2;
  float v[2 * P];
  GRID_STRIDE(j, pairs / P) {
    i64 i = j * P;
    int p = (int)imod(i, half);
    int l = (int)imod(idiv(i, (i64)half * H), L);
    const float* c = cs + (i64)l * half + p;
    const float* s = sn + (i64)l * half + p;
    if constexpr (W == 1) {
      v[0] = load_f(x + 2 * i);
      v[1] = load_f(x + 2 * i + 1);
    } else {
      load_pack(x + 2 * i, v);
    }
#pragma unroll
    for (int q = 0; q < P; ++q) {
      float a = v[2 * q], b = v[2 * q + 1];
      v[2 * q] = a * c[q] - b * s[q];
      v[2 * q + 1] = a * s[q] + b * c[q];
    }
    if constexpr (W == 1) {
      store_f(y + 2 * i, v[0]);
      store_f(y + 2 * i + 1, v[1]);
    } else {
      store_pack(y + 2 * i, v);
    }
  }
}

#define ROPE(SUFFIX, T)                                                                          \
  extern "C" __global__ void rope_##SUFFIX(const T* x, const float* cs, const float* sn, T* y,   \
                                           i64 pairs, int L, int H, int half) {                  \
    rope<T, 1>(x, cs, sn, y, pairs, L, H, half);                                                 \
  }                                                                                              \
  extern "C" __global__ void rope_packed_##SUFFIX(const T* x, const float* cs, const float* sn,  \
                                                  T* y, i64 pairs, int L, int H, int half) {     \
    rope<T, PACK(T)>(x, cs, sn, y, pairs, L, H, half);                                           \
  }
ROPE(f32, float)
ROPE(bf16, bf16_t)

extern "C" __global__ void embedding_f32(const float* table, const i64* ids, float* y, i64 rows,
                                         int d) {
  GRID_STRIDE(i, rows * d) {
    i64 r = i / d;
    y[i] = table[ids[r] * d + i % d];
  }
}

struct Conv3dGeometry {
  int c, t, h, w;       // input
  int kt, kh, kw;       // kernel
  int st, sh, sw;       // stride
  int pt, ph, pw;       // zero padding
  int to, ho, wo;       // output
};

// col [C*kt*kh*kw, nt*ho*wo] for output time slices [t0, t0 + nt) of one batch item x [C,T,H,W].
extern "C" __global__ void im2col3d_f32(const float* x, float* col, Conv3dGeometry g, int t0,
                                        int nt) {
  i64 cols = (i64)nt * g.ho * g.wo;
  i64 rows = (i64)g.c * g.kt * g.kh * g.kw;
  GRID_STRIDE(i, rows * cols) {
    i64 r = i / cols, q = i % cols;
    int kw = (int)(r % g.kw), kh = (int)((r / g.kw) % g.kh);
    int kt = (int)((r / ((i64)g.kw * g.kh)) % g.kt), c = (int)(r / ((i64)g.kw * g.kh * g.kt));
    int ow = (int)(q % g.wo), oh = (int)((q / g.wo) % g.ho), ot = t0 + (int)(q / ((i64)g.wo * g.ho));
    int it = ot * g.st + kt - g.pt, ih = oh * g.sh + kh - g.ph, iw = ow * g.sw + kw - g.pw;
    bool inside = it >= 0 && it < g.t && ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
    col[i] = inside ? x[(((i64)c * g.t + it) * g.h + ih) * g.w + iw] : 0.0f;
  }
}

// y[i] += bias[(i / inner) % channels]: a per-channel bias over [B, channels, inner], in place
// (F32 y, or BF16 y — cuDNN's convolution output — added in F32 and rounded once).
template <typename T>
__device__ void channel_bias(T* y, const float* bias, i64 n, i64 inner, int channels) {
  GRID_STRIDE(i, n) { store_f(y + i, load_f(y + i) + bias[imod(idiv(i, inner), channels)]); }
}
extern "C" __global__ void channel_bias_f32(float* y, const float* bias, i64 n, i64 inner,
                                            int channels) {
  channel_bias<float>(y, bias, n, inner, channels);
}
extern "C" __global__ void channel_bias_bf16(bf16_t* y, const float* bias, i64 n, i64 inner,
                                             int channels) {
  channel_bias<bf16_t>(y, bias, n, inner, channels);
}

// *flag = 1 when any of x[0..n) is NaN or ±Inf (all-ones exponent); left as it was otherwise. Every
// writer writes the same value, so no atomics are needed. The engine's non-finite check: one flag
// per request comes back instead of the step's output.
__device__ __forceinline__ bool nonfinite(float v) { return !isfinite(v); }
__device__ __forceinline__ bool nonfinite(bf16_t v) { return (v & 0x7f80) == 0x7f80; }
template <typename T>
__device__ void any_nonfinite(const T* x, i64 n, float* flag) {
  GRID_STRIDE(i, n) {
    if (nonfinite(x[i])) *flag = 1.0f;
  }
}
extern "C" __global__ void any_nonfinite_f32(const float* x, i64 n, float* flag) {
  any_nonfinite<float>(x, n, flag);
}
extern "C" __global__ void any_nonfinite_bf16(const bf16_t* x, i64 n, float* flag) {
  any_nonfinite<bf16_t>(x, n, flag);
}
