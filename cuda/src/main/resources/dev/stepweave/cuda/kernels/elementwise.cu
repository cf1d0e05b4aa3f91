// Elementwise maps over contiguous F32 and broadcasting binary ops over strided F32 views.
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

extern "C" __global__ void unary_f32(const float* x, float* y, i64 n, int op, float a, float b) {
  GRID_STRIDE(i, n) { y[i] = unary_op(op, x[i], a, b); }
}

// out is contiguous; s0 and s1 are a's and b's strides broadcast to out's shape.
extern "C" __global__ void binary_f32(const float* a, const float* b, float* y, Index8 ix, i64 n,
                                      int op) {
  GRID_STRIDE(i, n) {
    i64 oa, ob, unused;
    offsets(ix, i, oa, ob, unused);
    float u = a[oa], v = b[ob];
    float r;
    switch (op) {
      case 0: r = u + v; break;
      case 1: r = u - v; break;
      case 2: r = u * v; break;
      case 3: r = u / v; break;
      case 4: r = (u != u || v != v) ? u + v : fmaxf(u, v); break;
      default: r = (u != u || v != v) ? u + v : fminf(u, v); break;
    }
    y[i] = r;
  }
}
