// Strided gather/scatter with dtype conversion: dst[s1 offsets] = src[s0 offsets]. Serves
// contiguous(), upload conversion, concat (into a slice), pad (into the interior) and nearest
// upsampling (a stride-0 source view).
#define COPY(NAME, S, D)                                                              \
  extern "C" __global__ void NAME(const S* src, D* dst, Index8 ix, i64 n) {           \
    GRID_STRIDE(i, n) {                                                               \
      i64 a, b, c;                                                                    \
      offsets(ix, i, a, b, c);                                                        \
      store_f(dst + b, load_f(src + a));                                              \
    }                                                                                 \
  }
COPY(copy_f32_f32, float, float)
COPY(copy_f32_bf16, float, bf16_t)
COPY(copy_bf16_f32, bf16_t, float)
COPY(copy_bf16_bf16, bf16_t, bf16_t)

#define COPY_INT(NAME, S, D)                                                          \
  extern "C" __global__ void NAME(const S* src, D* dst, Index8 ix, i64 n) {           \
    GRID_STRIDE(i, n) {                                                               \
      i64 a, b, c;                                                                    \
      offsets(ix, i, a, b, c);                                                        \
      dst[b] = (D)src[a];                                                             \
    }                                                                                 \
  }
COPY_INT(copy_i64_i64, i64, i64)
COPY_INT(copy_i32_i64, int, i64)
COPY_INT(copy_i64_i32, i64, int)
COPY_INT(copy_i32_i32, int, int)
