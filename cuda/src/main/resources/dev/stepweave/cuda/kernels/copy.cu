// Strided gather/scatter with dtype conversion: dst[s1 offsets] = src[s0 offsets]. Serves
// contiguous(), upload conversion, concat (into a slice) and pad (into the interior); a source
// expanded along some dims (nearest upsampling) takes copy_expanded.
#define COPY(NAME, S, D)                                                              \
  extern "C" __global__ void NAME(const S* src, D* dst, Index8 ix, i64 n) {           \
    GRID_STRIDE(i, n) {                                                               \
      i64 a, b, c;                                                                    \
      offsets(ix, i, a, b, c);                                                        \
      store_f(dst + b, load_f(src + a));                                              \
    }                                                                                 \
  }
// An expanded source view (stride 0 along some dims: nearest upsampling) into a dense dst: one
// thread per source value, read once and stored at each replica (see binary_expanded).
#define COPY_EXPANDED(NAME, S, D)                                                     \
  extern "C" __global__ void NAME(const S* src, D* dst, Index8 own, Replicas64 rep,   \
                                  i64 values, int replicas) {                         \
    GRID_STRIDE(j, values) {                                                          \
      i64 a, b, c;                                                                    \
      offsets(own, j, a, b, c);                                                       \
      float v = load_f(src + a);                                                      \
      for (int r = 0; r < replicas; ++r) store_f(dst + b + rep.o[r], v);              \
    }                                                                                 \
  }
#define COPIES(S_CODE, S, D_CODE, D)             \
  COPY(copy_##S_CODE##_##D_CODE, S, D)           \
  COPY_EXPANDED(copy_expanded_##S_CODE##_##D_CODE, S, D)
COPIES(f32, float, f32, float)
COPIES(f32, float, bf16, bf16_t)
COPIES(bf16, bf16_t, f32, float)
COPIES(bf16, bf16_t, bf16, bf16_t)

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
