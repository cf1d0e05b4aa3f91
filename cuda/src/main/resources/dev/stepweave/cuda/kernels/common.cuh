// Shared by every kernel file (the compiler prepends it). NVRTC compiles without the CUDA
// headers, so bfloat16 is handled as its bit pattern.
typedef long long i64;
typedef unsigned short bf16_t;

#define NEG_INF __int_as_float(0xff800000)
#define FULL_MASK 0xffffffffu
#define GRID_STRIDE(i, n) \
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)gridDim.x * blockDim.x)

// Up to eight dimensions and three stride sets (elements) over the same index space.
struct Index8 {
  i64 shape[8];
  i64 s0[8];
  i64 s1[8];
  i64 s2[8];
  int rank;
};

// The offsets (elements) of an expanded view's replicas of one value: up to 64, the innermost
// replica dimension fastest. A kernel parameter, so every thread reads the same constant bank.
struct Replicas64 {
  i64 o[64];
};

// Quotient and remainder of non-negative a and b: 32-bit division when both fit (several times
// fewer instructions than the 64-bit one; the branch is uniform across a warp in practice).
__device__ __forceinline__ i64 idiv(i64 a, i64 b) {
  return ((a | b) >> 32) ? a / b : (i64)((unsigned)a / (unsigned)b);
}
__device__ __forceinline__ i64 imod(i64 a, i64 b) {
  return ((a | b) >> 32) ? a % b : (i64)((unsigned)a % (unsigned)b);
}

__device__ __forceinline__ void offsets(const Index8& ix, i64 flat, i64& o0, i64& o1, i64& o2) {
  o0 = 0; o1 = 0; o2 = 0;
#pragma unroll
  for (int d = 7; d >= 0; --d) {
    if (d < ix.rank) {
      i64 c = imod(flat, ix.shape[d]);
      flat = idiv(flat, ix.shape[d]);
      o0 += c * ix.s0[d];
      o1 += c * ix.s1[d];
      o2 += c * ix.s2[d];
    }
  }
}

__device__ __forceinline__ float load_f(const float* p) { return *p; }
__device__ __forceinline__ float load_f(const bf16_t* p) {
  return __uint_as_float(((unsigned)*p) << 16);
}
__device__ __forceinline__ void store_f(float* p, float v) { *p = v; }
// Round to nearest even, as torch and DType.floatToBf16 do; NaN stays NaN.
__device__ __forceinline__ unsigned bf16_bits(float v) {
  unsigned u = __float_as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return (u >> 16) | 0x40u;
  }
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
__device__ __forceinline__ void store_f(bf16_t* p, float v) { *p = (bf16_t)bf16_bits(v); }

// Sixteen bytes moved as one access (4 floats or 8 bf16 values): memory-bound kernels issue an
// eighth of the loads of element-wise access. Callers check 16-byte alignment and that the
// element count is a multiple of PACK(T).
struct alignas(16) Pack16 {
  unsigned w[4];
};
template <typename T> struct PackWidth;
template <> struct PackWidth<float> { static constexpr int N = 4; };
template <> struct PackWidth<bf16_t> { static constexpr int N = 8; };
#define PACK(T) (PackWidth<T>::N)

__device__ __forceinline__ void load_pack(const float* p, float* v) {
  Pack16 u = *reinterpret_cast<const Pack16*>(p);
#pragma unroll
  for (int k = 0; k < 4; ++k) v[k] = __uint_as_float(u.w[k]);
}
__device__ __forceinline__ void load_pack(const bf16_t* p, float* v) {
  Pack16 u = *reinterpret_cast<const Pack16*>(p);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    v[2 * k] = __uint_as_float(u.w[k] << 16);
    v[2 * k + 1] = __uint_as_float(u.w[k] & 0xffff0000u);
  }
}
__device__ __forceinline__ void store_pack(float* p, const float* v) {
  Pack16 u;
#pragma unroll
  for (int k = 0; k < 4; ++k) u.w[k] = __float_as_uint(v[k]);
  *reinterpret_cast<Pack16*>(p) = u;
}
__device__ __forceinline__ void store_pack(bf16_t* p, const float* v) {
  Pack16 u;
#pragma unroll
  for (int k = 0; k < 4; ++k) u.w[k] = bf16_bits(v[2 * k]) | (bf16_bits(v[2 * k + 1]) << 16);
  *reinterpret_cast<Pack16*>(p) = u;
}

// Block-wide sum; every thread gets the result. blockDim.x is a multiple of 32, at most 1024.
__device__ double block_sum(double v) {
  __shared__ double partial[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  int warps = blockDim.x / 32;
  v = lane < warps ? partial[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
  return v;
}

// Two block-wide sums with one pair of barriers; every thread gets both results.
__device__ void block_sum2(double& a, double& b) {
  __shared__ double partial[2][32];
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(FULL_MASK, a, o);
    b += __shfl_xor_sync(FULL_MASK, b, o);
  }
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) {
    partial[0][warp] = a;
    partial[1][warp] = b;
  }
  __syncthreads();
  int warps = blockDim.x / 32;
  a = lane < warps ? partial[0][lane] : 0.0;
  b = lane < warps ? partial[1][lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(FULL_MASK, a, o);
    b += __shfl_xor_sync(FULL_MASK, b, o);
  }
}

__device__ float block_max(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  int warps = blockDim.x / 32;
  v = lane < warps ? partial[lane] : NEG_INF;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
  return v;
}

// W consecutive elements: one 16-byte pack when W = PACK(T), else W element-wise accesses.
template <int W, typename T>
__device__ __forceinline__ void load_n(const T* p, float* v) {
  if constexpr (W == PackWidth<T>::N) {
    load_pack(p, v);
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] = load_f(p + k);
  }
}
template <int W, typename T>
__device__ __forceinline__ void store_n(T* p, const float* v) {
  if constexpr (W == PackWidth<T>::N) {
    store_pack(p, v);
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) store_f(p + k, v[k]);
  }
}

// W floats of a parameter vector (weights, modulation, rotary tables): 16-byte loads when p is
// 16-byte aligned and W a multiple of 4, else one by one. Same values either way.
template <int W>
__device__ __forceinline__ void load_floats(const float* p, float* v) {
  if constexpr (W % 4 == 0) {
    if ((reinterpret_cast<unsigned long long>(p) & 15ull) == 0) {
#pragma unroll
      for (int k = 0; k < W; k += 4) {
        Pack16 u = *reinterpret_cast<const Pack16*>(p + k);
#pragma unroll
        for (int q = 0; q < 4; ++q) v[k + q] = __uint_as_float(u.w[q]);
      }
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < W; ++k) v[k] = p[k];
}
