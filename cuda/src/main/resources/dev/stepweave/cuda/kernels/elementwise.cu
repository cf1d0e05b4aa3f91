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
template <typename T>
__device__ void binary(const T* a, const T* b, T* y, const Index8& ix, i64 n, int op) {
  GRID_STRIDE(i, n) {
    i64 oa, ob, unused;
    offsets(ix, i, oa, ob, unused);
    float u = load_f(a + oa), v = load_f(b + ob);
    float r;
    switch (op) {
      case 0: r = u + v; break;
      case 1: r = u - v; break;
      case 2: r = u * v; break;
      case 3: r = u / v; break;
      case 4: r = (u != u || v != v) ? u + v : fmaxf(u, v); break;
      default: r = (u != u || v != v) ? u + v : fminf(u, v); break;
    }
    store_f(y + i, r);
  }
}

// out = x + y·gate over contiguous [rows, n] x, y and out; row r's gate starts at
// (r / rowsPerGroup)·groupStride. Separate roundings, as the unfused mul and add.
template <typename T>
__device__ void gated_residual(const T* x, const T* y, const float* gate, T* out, i64 rows, int n,
                               i64 groupStride, i64 rowsPerGroup) {
  GRID_STRIDE(i, rows * n) {
    float g = gate[idiv(idiv(i, n), rowsPerGroup) * groupStride + imod(i, n)];
    store_f(out + i, __fadd_rn(load_f(x + i), __fmul_rn(load_f(y + i), g)));
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
  extern "C" __global__ void gated_residual_##SUFFIX(const T* x, const T* y, const float* gate, \
                                                     T* out, i64 rows, int n, i64 groupStride,  \
                                                     i64 rowsPerGroup) {                        \
    gated_residual<T>(x, y, gate, out, rows, n, groupStride, rowsPerGroup);                     \
  }
ELEMENTWISE(f32, float)
ELEMENTWISE(bf16, bf16_t)
