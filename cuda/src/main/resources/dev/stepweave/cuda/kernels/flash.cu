// Flash attention on the tensor cores (BF16 in, F32 accumulate and softmax, F32 or BF16 out), no
// bias.
// q [B, Lq, H, D], k [B, Lk, H, D], v [B, Lk, H, D] contiguous BF16; o [B, Lq, H, D] F32.
// A block of 8 warps owns 128 query rows of one (batch, head); each warp keeps its 16 rows of Q as
// mma A-fragments in registers. K/V tiles of 64 keys stream through two shared-memory buffers
// (cp.async fills the next while the current one is used). Scores S = Q·Kᵀ and O += P·V run as
// mma.sync m16n8k16; the online softmax works in the log2 domain on the S fragments, which are
// re-packed as BF16 A-fragments of P without leaving registers.
// Shared rows are D BF16 = D/8 chunks of 16 bytes; chunk c of row r is stored at c ^ (r mod 8)
// (for D >= 64) so the 8 rows one ldmatrix phase reads fall in different banks.
#define FLASH_BM 128
#define FLASH_BN 64
#define FLASH_WARPS 8

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void mma_bf16(float* c, const unsigned* a, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a BF16 pair (round to nearest even), the first in the low half.
__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
  bf16_t a, b;
  store_f(&a, lo);
  store_f(&b, hi);
  return ((unsigned)b << 16) | a;
}

template <int D>
__device__ __forceinline__ int swizzle(int row, int chunk) {
  constexpr int CH = D / 8;
  return chunk ^ (row & (CH < 8 ? CH - 1 : 7));
}

// Byte address of chunk `chunk` of row `row` in a tile of rows of D BF16.
template <int D>
__device__ __forceinline__ unsigned tile_addr(unsigned base, int row, int chunk) {
  return base + (unsigned)(row * D + swizzle<D>(row, chunk) * 8) * 2u;
}

// Copies rows [r0, r0 + rows) (those below `limit`; the rest are zero-filled) of a [L, H, D]
// slice starting at `src` with row stride `stride` elements into a swizzled tile.
template <int D>
__device__ __forceinline__ void load_tile(unsigned dst, const bf16_t* src, i64 stride, int r0,
                                          int rows, int limit) {
  constexpr int CH = D / 8;
  for (int e = threadIdx.x; e < rows * CH; e += blockDim.x) {
    const int r = e / CH, c = e % CH;
    const bool ok = r0 + r < limit;
    const bf16_t* g = src + (i64)(ok ? r0 + r : 0) * stride + c * 8;
    cp_async16(tile_addr<D>(dst, r, c), g, ok ? 16 : 0);
  }
}

// One (batch, head) — blockIdx.y — of [B, L, H, D] tensors: the rows' stride and the element
// offsets of its first query row and first key row.
struct HeadSlices {
  i64 stride, queries, keys;
};

template <int D>
__device__ __forceinline__ HeadSlices head_slices(int Lq, int Lk, int H) {
  const int b = blockIdx.y / H, h = blockIdx.y % H;
  const i64 stride = (i64)H * D;
  return {stride, (i64)b * Lq * stride + (i64)h * D, (i64)b * Lk * stride + (i64)h * D};
}

// acc (m16n8 tiles of N keys) += this warp's 16 rows, as A-fragments a[kc] (one per 16 of D
// channels), times the N rows of a swizzled tile transposed: Q·Kᵀ, dO·Vᵀ.
template <int D, int N>
__device__ __forceinline__ void mma_by_rows(float (*acc)[4], unsigned (*a)[4], unsigned tile,
                                            int lane) {
#pragma unroll
  for (int kc = 0; kc < D / 16; ++kc) {
#pragma unroll
    for (int np = 0; np < N / 16; ++np) {
      unsigned b[4];
      const int row = np * 16 + (lane % 8) + (lane / 16) * 8;
      ldmatrix_x4(b, tile_addr<D>(tile, row, kc * 2 + (lane / 8) % 2));
      mma_bf16(acc[2 * np], a[kc], b[0], b[1]);
      mma_bf16(acc[2 * np + 1], a[kc], b[2], b[3]);
    }
  }
}

// The BF16 A-fragment of a warp's m16n8 C tiles 2kc and 2kc + 1 (16 keys of its scores),
// without leaving registers.
__device__ __forceinline__ void a_fragment(unsigned* a, float (*c)[4], int kc) {
  a[0] = pack_bf16(c[2 * kc][0], c[2 * kc][1]);
  a[1] = pack_bf16(c[2 * kc][2], c[2 * kc][3]);
  a[2] = pack_bf16(c[2 * kc + 1][0], c[2 * kc + 1][1]);
  a[3] = pack_bf16(c[2 * kc + 1][2], c[2 * kc + 1][3]);
}

// acc (m16n8 tiles of D columns) += A-fragment a (16 keys of a warp's rows) times rows
// [16kc, 16kc + 16) of a swizzled tile of D columns: P·V, dS·K, Pᵀ·dO, dSᵀ·Q.
template <int D>
__device__ __forceinline__ void mma_by_tile(float (*acc)[4], const unsigned* a, unsigned tile,
                                            int kc, int lane) {
#pragma unroll
  for (int dp = 0; dp < D / 16; ++dp) {
    unsigned b[4];
    const int row = kc * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
    ldmatrix_x4_trans(b, tile_addr<D>(tile, row, dp * 2 + lane / 16));
    mma_bf16(acc[2 * dp], a, b[0], b[1]);
    mma_bf16(acc[2 * dp + 1], a, b[2], b[3]);
  }
}

// Row r (0: the lane's row lane/4, 1: lane/4 + 8) of a warp's scores over N keys into the log2
// domain, −∞ at keys from Lk on (keyBase: the tile's first key plus the lane's first column);
// returns the row's maximum over its four lanes.
template <int N>
__device__ __forceinline__ float scale_row(float (*s)[4], int r, int keyBase, int Lk,
                                           float scaleLog2) {
  float m = NEG_INF;
#pragma unroll
  for (int nt = 0; nt < N / 8; ++nt) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const bool valid = keyBase + nt * 8 + e < Lk;
      const float x = valid ? s[nt][2 * r + e] * scaleLog2 : NEG_INF;
      s[nt][2 * r + e] = x;
      m = fmaxf(m, x);
    }
  }
  m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, 1));
  return fmaxf(m, __shfl_xor_sync(FULL_MASK, m, 2));
}

template <int D, typename O>
__device__ __forceinline__ void flash_forward(const bf16_t* q, const bf16_t* k, const bf16_t* v,
                                              O* o, int Lq, int Lk, int H, float scaleLog2) {
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned sQ = smem_u32(smem);
  const unsigned sK = sQ + FLASH_BM * D * 2;
  const unsigned sV = sK + 2 * FLASH_BN * D * 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m0 = blockIdx.x * FLASH_BM;
  const HeadSlices at = head_slices<D>(Lq, Lk, H);
  const i64 stride = at.stride;
  const bf16_t* qb = q + at.queries;
  const bf16_t* kb = k + at.keys;
  const bf16_t* vb = v + at.keys;
  const int tiles = (Lk + FLASH_BN - 1) / FLASH_BN;

  load_tile<D>(sQ, qb, stride, m0, FLASH_BM, Lq);
  load_tile<D>(sK, kb, stride, 0, FLASH_BN, Lk);
  load_tile<D>(sV, vb, stride, 0, FLASH_BN, Lk);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  // This warp's 16 query rows as A-fragments, one per 16 channels.
  unsigned qf[D / 16][4];
#pragma unroll
  for (int kc = 0; kc < D / 16; ++kc) {
    const int row = warp * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
    ldmatrix_x4(qf[kc], tile_addr<D>(sQ, row, kc * 2 + lane / 16));
  }

  float acc[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
  // Rows lane/4 and lane/4 + 8 of the warp's 16: running max (log2 domain) and partial sums.
  float rowMax[2] = {NEG_INF, NEG_INF};
  float rowSum[2] = {0.0f, 0.0f};

  for (int t = 0; t < tiles; ++t) {
    const int cur = t & 1;
    if (t + 1 < tiles) {
      const unsigned next = (cur ^ 1) * FLASH_BN * D * 2;
      load_tile<D>(sK + next, kb, stride, (t + 1) * FLASH_BN, FLASH_BN, Lk);
      load_tile<D>(sV + next, vb, stride, (t + 1) * FLASH_BN, FLASH_BN, Lk);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const unsigned kt = sK + cur * FLASH_BN * D * 2;
    const unsigned vt = sV + cur * FLASH_BN * D * 2;

    float s[FLASH_BN / 8][4];
#pragma unroll
    for (int i = 0; i < FLASH_BN / 8; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
    mma_by_rows<D, FLASH_BN>(s, qf, kt, lane);

    const int keyBase = t * FLASH_BN + (lane % 4) * 2;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float tileMax = scale_row<FLASH_BN>(s, r, keyBase, Lk, scaleLog2);
      const float newMax = fmaxf(rowMax[r], tileMax);
      // newMax is finite: every tile holds at least one real key.
      const float corr = exp2f(rowMax[r] - newMax);
      rowMax[r] = newMax;
      float sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < FLASH_BN / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float p = exp2f(s[nt][2 * r + e] - newMax);
          s[nt][2 * r + e] = p;
          sum += p;
        }
      }
      rowSum[r] = rowSum[r] * corr + sum;
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        acc[dt][2 * r] *= corr;
        acc[dt][2 * r + 1] *= corr;
      }
    }

#pragma unroll
    for (int kc = 0; kc < FLASH_BN / 16; ++kc) {
      unsigned pa[4];
      a_fragment(pa, s, kc);
      mma_by_tile<D>(acc, pa, vt, kc, lane);
    }
    // The next iteration refills the other buffer; the one after refills this one.
    __syncthreads();
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = rowSum[r];
    l += __shfl_xor_sync(FULL_MASK, l, 1);
    l += __shfl_xor_sync(FULL_MASK, l, 2);
    const float inv = 1.0f / l;
    const int row = m0 + warp * 16 + lane / 4 + 8 * r;
    if (row < Lq) {
      O* out = o + at.queries + row * stride + (lane % 4) * 2;
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        store_f(out + dt * 8, acc[dt][2 * r] * inv);
        store_f(out + dt * 8 + 1, acc[dt][2 * r + 1] * inv);
      }
    }
  }
}

// flash_bf16_d<D>_<out>: BF16 q, k, v with head dim D, F32 or BF16 output.
#define FLASH(DIM, SUFFIX, O)                                                                     \
  extern "C" __global__ void __launch_bounds__(FLASH_WARPS * 32, 1)                               \
      flash_bf16_d##DIM##_##SUFFIX(const bf16_t* q, const bf16_t* k, const bf16_t* v, O* o,       \
                                   int Lq, int Lk, int H, float scaleLog2) {                      \
    flash_forward<DIM, O>(q, k, v, o, Lq, Lk, H, scaleLog2);                                      \
  }
FLASH(16, f32, float)
FLASH(32, f32, float)
FLASH(64, f32, float)
FLASH(128, f32, float)
FLASH(16, bf16, bf16_t)
FLASH(32, bf16, bf16_t)
FLASH(64, bf16, bf16_t)
FLASH(128, bf16, bf16_t)

// ---------------------------------------------------------------------------------------------
// The backward (FlashAttention-2's, in three kernels, no atomics). BF16 q, k, v, dO [B, L, H, D];
// F32 gradients.
//
// flash_bwd_rows: per query row, in the log2 domain, L = max + log2 Σ exp2(s·scaleLog2 − max)
// and the row term D = Σ_j P_j·dP_j with dP = dO·Vᵀ — from the backward's own P and dP, not as
// rowsum(dO ∘ O) from the forward's rounded output: then every row of dS = P ∘ (dP − D) sums to
// zero to F32 rounding, which keeps the keys' shift invariance (AttentionBackwardByOps says why
// that matters). Four warps, 16 query rows each, stream 64-key tiles of K and V.
//
// flash_bwd_keys: a block of four warps owns 64 keys of one (batch, head), each warp 16, and streams
// the query tiles (BM rows of Q and dO, with their L and D): Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ on the
// tensor cores, P = exp2(Sᵀ·scaleLog2 − L), dSᵀ = P ∘ (dPᵀ − D) in F32, then dV += Pᵀ·dO and
// dK += dSᵀ·Q with P and dS as BF16 A-fragments made without leaving registers (as the forward's
// P). dS goes in as two BF16 parts, its rounding and what the rounding left, two products: one
// rounding of dS element by element would leave about 2⁻¹⁰ of ‖dK‖ in Σⱼ dKⱼ (measured 2e-3 on an
// H100), which a key projection's bias gradient — nearly that sum — amplifies past the BF16 bound.
//
// flash_bwd_dq: dQ = scale·dS·K by query rows, as the row pass is laid out, recomputing S and dP
// (dS once in BF16): where the keys' blocks added their shares into dQ with F32 atomics, a 32 760-
// token attention made 26 G of them and took 165 ms on an H100 (run 31).
#define FLASH_BWD_BN 64
#define FLASH_BWD_ROWS 64

// The BF16 pair of x and y (as pack_bf16), and the BF16 pair of what that rounding left of each:
// their sum carries about 16 bits of x and y.
__device__ __forceinline__ void pack_bf16_split(float x, float y, unsigned& hi, unsigned& lo) {
  hi = pack_bf16(x, y);
  lo = pack_bf16(x - __uint_as_float((hi & 0xffffu) << 16), y - __uint_as_float(hi & 0xffff0000u));
}

// The row and dQ passes' start: this block's 64 query rows of Q and dO into shared memory (sQ,
// sO), then this warp's 16 of them as A-fragments.
template <int D>
__device__ __forceinline__ void load_query_rows(const bf16_t* qb, const bf16_t* ob, i64 stride,
                                                int m0, int Lq, unsigned sQ, unsigned sO,
                                                unsigned (*qf)[4], unsigned (*of)[4], int warp,
                                                int lane) {
  load_tile<D>(sQ, qb, stride, m0, FLASH_BWD_ROWS, Lq);
  load_tile<D>(sO, ob, stride, m0, FLASH_BWD_ROWS, Lq);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
#pragma unroll
  for (int kc = 0; kc < D / 16; ++kc) {
    const int row = warp * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
    ldmatrix_x4(qf[kc], tile_addr<D>(sQ, row, kc * 2 + lane / 16));
    ldmatrix_x4(of[kc], tile_addr<D>(sO, row, kc * 2 + lane / 16));
  }
}

// Rows [r0, r0 + rows) of two [L, H, D] slices into two tiles, once every warp is done with the
// tiles' previous rows.
template <int D>
__device__ __forceinline__ void load_tiles(unsigned dstA, const bf16_t* a, unsigned dstB,
                                           const bf16_t* b, i64 stride, int r0, int rows,
                                           int limit) {
  __syncthreads();
  load_tile<D>(dstA, a, stride, r0, rows, limit);
  load_tile<D>(dstB, b, stride, r0, rows, limit);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
}

template <int D>
__device__ __forceinline__ void flash_bwd_rows(const bf16_t* q, const bf16_t* k, const bf16_t* v,
                                               const bf16_t* dO, float* lse, float* rowD, int Lq,
                                               int Lk, int H, float scaleLog2) {
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned sQ = smem_u32(smem);
  const unsigned sO = sQ + FLASH_BWD_ROWS * D * 2;
  const unsigned sK = sO + FLASH_BWD_ROWS * D * 2;
  const unsigned sV = sK + FLASH_BWD_BN * D * 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m0 = blockIdx.x * FLASH_BWD_ROWS;
  const HeadSlices at = head_slices<D>(Lq, Lk, H);
  const int tiles = (Lk + FLASH_BWD_BN - 1) / FLASH_BWD_BN;
  unsigned qf[D / 16][4], of[D / 16][4];
  load_query_rows<D>(q + at.queries, dO + at.queries, at.stride, m0, Lq, sQ, sO, qf, of, warp,
                     lane);

  float rowMax[2] = {NEG_INF, NEG_INF};
  float rowSum[2] = {0.0f, 0.0f};
  float rowDot[2] = {0.0f, 0.0f};
  for (int t = 0; t < tiles; ++t) {
    load_tiles<D>(sK, k + at.keys, sV, v + at.keys, at.stride, t * FLASH_BWD_BN, FLASH_BWD_BN, Lk);
    float s[FLASH_BWD_BN / 8][4], dp[FLASH_BWD_BN / 8][4];
#pragma unroll
    for (int i = 0; i < FLASH_BWD_BN / 8; ++i) {
      s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
      dp[i][0] = dp[i][1] = dp[i][2] = dp[i][3] = 0.0f;
    }
    mma_by_rows<D, FLASH_BWD_BN>(s, qf, sK, lane);
    mma_by_rows<D, FLASH_BWD_BN>(dp, of, sV, lane);
    const int keyBase = t * FLASH_BWD_BN + (lane % 4) * 2;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float tileMax = scale_row<FLASH_BWD_BN>(s, r, keyBase, Lk, scaleLog2);
      const float newMax = fmaxf(rowMax[r], tileMax);
      const float corr = exp2f(rowMax[r] - newMax);
      rowMax[r] = newMax;
      float sum = 0.0f, dot = 0.0f;
#pragma unroll
      for (int nt = 0; nt < FLASH_BWD_BN / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float p = exp2f(s[nt][2 * r + e] - newMax);
          sum += p;
          dot += p * dp[nt][2 * r + e];
        }
      }
      rowSum[r] = rowSum[r] * corr + sum;
      rowDot[r] = rowDot[r] * corr + dot;
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = rowSum[r], d = rowDot[r];
    l += __shfl_xor_sync(FULL_MASK, l, 1);
    l += __shfl_xor_sync(FULL_MASK, l, 2);
    d += __shfl_xor_sync(FULL_MASK, d, 1);
    d += __shfl_xor_sync(FULL_MASK, d, 2);
    const int row = m0 + warp * 16 + lane / 4 + 8 * r;
    if (row < Lq && lane % 4 == 0) {
      lse[(i64)blockIdx.y * Lq + row] = rowMax[r] + log2f(l);
      rowD[(i64)blockIdx.y * Lq + row] = d / l;
    }
  }
}

template <int D, int BM>
__device__ __forceinline__ void flash_bwd_keys(const bf16_t* q, const bf16_t* k, const bf16_t* v,
                                               const bf16_t* dO, const float* lse,
                                               const float* rowD, float* dk, float* dv, int Lq,
                                               int Lk, int H, float scaleLog2, float scale) {
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned sK = smem_u32(smem);
  const unsigned sV = sK + FLASH_BWD_BN * D * 2;
  const unsigned sQ = sV + FLASH_BWD_BN * D * 2;
  const unsigned sO = sQ + BM * D * 2;
  float* sL = (float*)(smem + (2 * FLASH_BWD_BN + 2 * BM) * D * 2);
  float* sD = sL + BM;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n0 = blockIdx.x * FLASH_BWD_BN;
  const HeadSlices at = head_slices<D>(Lq, Lk, H);
  const i64 stride = at.stride;
  const float* lb = lse + (i64)blockIdx.y * Lq;
  const float* db = rowD + (i64)blockIdx.y * Lq;

  load_tile<D>(sK, k + at.keys, stride, n0, FLASH_BWD_BN, Lk);
  load_tile<D>(sV, v + at.keys, stride, n0, FLASH_BWD_BN, Lk);
  cp_async_commit();

  float dka[D / 8][4], dva[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) {
    dka[i][0] = dka[i][1] = dka[i][2] = dka[i][3] = 0.0f;
    dva[i][0] = dva[i][1] = dva[i][2] = dva[i][3] = 0.0f;
  }
  const int qTiles = (Lq + BM - 1) / BM;
  for (int t = 0; t < qTiles; ++t) {
    const int i0 = t * BM;
    __syncthreads();  // every warp is done with the previous query tile
    load_tile<D>(sQ, q + at.queries, stride, i0, BM, Lq);
    load_tile<D>(sO, dO + at.queries, stride, i0, BM, Lq);
    cp_async_commit();
    for (int e = threadIdx.x; e < BM; e += blockDim.x) {
      const bool ok = i0 + e < Lq;
      sL[e] = ok ? lb[i0 + e] : 0.0f;
      sD[e] = ok ? db[i0 + e] : 0.0f;
    }
    cp_async_wait<0>();
    __syncthreads();

    // Sᵀ and dPᵀ: this warp's 16 keys by the tile's BM queries.
    float st[BM / 8][4], dpt[BM / 8][4];
#pragma unroll
    for (int i = 0; i < BM / 8; ++i) {
      st[i][0] = st[i][1] = st[i][2] = st[i][3] = 0.0f;
      dpt[i][0] = dpt[i][1] = dpt[i][2] = dpt[i][3] = 0.0f;
    }
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
      unsigned ka[4], va[4];
      const int arow = warp * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
      ldmatrix_x4(ka, tile_addr<D>(sK, arow, kc * 2 + lane / 16));
      ldmatrix_x4(va, tile_addr<D>(sV, arow, kc * 2 + lane / 16));
#pragma unroll
      for (int np = 0; np < BM / 16; ++np) {
        unsigned bq[4];
        const int brow = np * 16 + (lane % 8) + (lane / 16) * 8;
        ldmatrix_x4(bq, tile_addr<D>(sQ, brow, kc * 2 + (lane / 8) % 2));
        mma_bf16(st[2 * np], ka, bq[0], bq[1]);
        mma_bf16(st[2 * np + 1], ka, bq[2], bq[3]);
        ldmatrix_x4(bq, tile_addr<D>(sO, brow, kc * 2 + (lane / 8) % 2));
        mma_bf16(dpt[2 * np], va, bq[0], bq[1]);
        mma_bf16(dpt[2 * np + 1], va, bq[2], bq[3]);
      }
    }
    // P and dS in place of Sᵀ and dPᵀ; a padded key or query row gets zeros.
#pragma unroll
    for (int nt = 0; nt < BM / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = n0 + warp * 16 + lane / 4 + 8 * (e >> 1);
        const int ql = nt * 8 + (lane % 4) * 2 + (e & 1);
        const float p =
            key < Lk && i0 + ql < Lq ? exp2f(st[nt][e] * scaleLog2 - sL[ql]) : 0.0f;
        st[nt][e] = p;
        dpt[nt][e] = p * (dpt[nt][e] - sD[ql]);
      }
    }
    // dV += Pᵀ·dO and dK += dSᵀ·Q (scaled at the end).
#pragma unroll
    for (int kc = 0; kc < BM / 16; ++kc) {
      unsigned pa[4], sa[4], sl[4];
      a_fragment(pa, st, kc);
      pack_bf16_split(dpt[2 * kc][0], dpt[2 * kc][1], sa[0], sl[0]);
      pack_bf16_split(dpt[2 * kc][2], dpt[2 * kc][3], sa[1], sl[1]);
      pack_bf16_split(dpt[2 * kc + 1][0], dpt[2 * kc + 1][1], sa[2], sl[2]);
      pack_bf16_split(dpt[2 * kc + 1][2], dpt[2 * kc + 1][3], sa[3], sl[3]);
      mma_by_tile<D>(dva, pa, sO, kc, lane);
      mma_by_tile<D>(dka, sa, sQ, kc, lane);
      mma_by_tile<D>(dka, sl, sQ, kc, lane);
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = n0 + warp * 16 + lane / 4 + 8 * r;
    if (key < Lk) {
      const i64 e = at.keys + key * stride + (lane % 4) * 2;
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        dk[e + dt * 8] = scale * dka[dt][2 * r];
        dk[e + dt * 8 + 1] = scale * dka[dt][2 * r + 1];
        dv[e + dt * 8] = dva[dt][2 * r];
        dv[e + dt * 8 + 1] = dva[dt][2 * r + 1];
      }
    }
  }
}

template <int D, int KT>
__device__ __forceinline__ void flash_bwd_dq(const bf16_t* q, const bf16_t* k, const bf16_t* v,
                                             const bf16_t* dO, const float* lse, const float* rowD,
                                             float* dq, int Lq, int Lk, int H, float scaleLog2,
                                             float scale) {
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned sQ = smem_u32(smem);
  const unsigned sO = sQ + FLASH_BWD_ROWS * D * 2;
  const unsigned sK = sO + FLASH_BWD_ROWS * D * 2;
  const unsigned sV = sK + KT * D * 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m0 = blockIdx.x * FLASH_BWD_ROWS;
  const HeadSlices at = head_slices<D>(Lq, Lk, H);
  const int tiles = (Lk + KT - 1) / KT;
  unsigned qf[D / 16][4], of[D / 16][4];
  load_query_rows<D>(q + at.queries, dO + at.queries, at.stride, m0, Lq, sQ, sO, qf, of, warp,
                     lane);
  // Rows lane/4 and lane/4 + 8 of the warp's 16: their L and D (padded rows: zeros, unstored).
  float rowL[2], rowT[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = m0 + warp * 16 + lane / 4 + 8 * r;
    rowL[r] = row < Lq ? lse[(i64)blockIdx.y * Lq + row] : 0.0f;
    rowT[r] = row < Lq ? rowD[(i64)blockIdx.y * Lq + row] : 0.0f;
  }
  float acc[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

  for (int t = 0; t < tiles; ++t) {
    load_tiles<D>(sK, k + at.keys, sV, v + at.keys, at.stride, t * KT, KT, Lk);
    float s[KT / 8][4], dp[KT / 8][4];
#pragma unroll
    for (int i = 0; i < KT / 8; ++i) {
      s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
      dp[i][0] = dp[i][1] = dp[i][2] = dp[i][3] = 0.0f;
    }
    mma_by_rows<D, KT>(s, qf, sK, lane);
    mma_by_rows<D, KT>(dp, of, sV, lane);
    // dS in place of S; a padded key gets zero.
    const int keyBase = t * KT + (lane % 4) * 2;
#pragma unroll
    for (int nt = 0; nt < KT / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = keyBase + nt * 8 + (e & 1) < Lk
                            ? exp2f(s[nt][e] * scaleLog2 - rowL[e >> 1])
                            : 0.0f;
        s[nt][e] = p * (dp[nt][e] - rowT[e >> 1]);
      }
    }
    // dQ += dS·K: dS as BF16 A-fragments (as the forward's P), K read transposed (as its V).
#pragma unroll
    for (int kc = 0; kc < KT / 16; ++kc) {
      unsigned sa[4];
      a_fragment(sa, s, kc);
      mma_by_tile<D>(acc, sa, sK, kc, lane);
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = m0 + warp * 16 + lane / 4 + 8 * r;
    if (row < Lq) {
      float* out = dq + at.queries + row * at.stride + (lane % 4) * 2;
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        out[dt * 8] = scale * acc[dt][2 * r];
        out[dt * 8 + 1] = scale * acc[dt][2 * r + 1];
      }
    }
  }
}

// flash_bwd_rows_d<D>, flash_bwd_keys_d<D> and flash_bwd_dq_d<D>: head dim D; at D = 128, 32 query
// rows a tile in the key pass and 32 keys a tile in the dQ pass (their accumulators take 128 and 64
// registers there), 64 below.
#define FLASH_BWD(DIM, BM, KT)                                                                    \
  extern "C" __global__ void __launch_bounds__(128, 1)                                            \
      flash_bwd_rows_d##DIM(const bf16_t* q, const bf16_t* k, const bf16_t* v, const bf16_t* dO,  \
                            float* lse, float* rowD, int Lq, int Lk, int H, float scaleLog2) {    \
    flash_bwd_rows<DIM>(q, k, v, dO, lse, rowD, Lq, Lk, H, scaleLog2);                            \
  }                                                                                               \
  extern "C" __global__ void __launch_bounds__(128, 1) flash_bwd_keys_d##DIM(                     \
      const bf16_t* q, const bf16_t* k, const bf16_t* v, const bf16_t* dO, const float* lse,      \
      const float* rowD, float* dk, float* dv, int Lq, int Lk, int H, float scaleLog2,            \
      float scale) {                                                                              \
    flash_bwd_keys<DIM, BM>(q, k, v, dO, lse, rowD, dk, dv, Lq, Lk, H, scaleLog2, scale);         \
  }                                                                                               \
  extern "C" __global__ void __launch_bounds__(128, 1) flash_bwd_dq_d##DIM(                       \
      const bf16_t* q, const bf16_t* k, const bf16_t* v, const bf16_t* dO, const float* lse,      \
      const float* rowD, float* dq, int Lq, int Lk, int H, float scaleLog2, float scale) {        \
    flash_bwd_dq<DIM, KT>(q, k, v, dO, lse, rowD, dq, Lq, Lk, H, scaleLog2, scale);               \
  }
FLASH_BWD(16, 64, 64)
FLASH_BWD(32, 64, 64)
FLASH_BWD(64, 64, 64)
FLASH_BWD(128, 32, 32)
