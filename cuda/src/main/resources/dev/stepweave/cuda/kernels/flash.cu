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

template <int D, typename O>
__device__ __forceinline__ void flash_forward(const bf16_t* q, const bf16_t* k, const bf16_t* v,
                                              O* o, int Lq, int Lk, int H, float scaleLog2) {
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned sQ = smem_u32(smem);
  const unsigned sK = sQ + FLASH_BM * D * 2;
  const unsigned sV = sK + 2 * FLASH_BN * D * 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int b = blockIdx.y / H, h = blockIdx.y % H;
  const int m0 = blockIdx.x * FLASH_BM;
  const i64 stride = (i64)H * D;
  const bf16_t* qb = q + (i64)b * Lq * stride + (i64)h * D;
  const bf16_t* kb = k + (i64)b * Lk * stride + (i64)h * D;
  const bf16_t* vb = v + (i64)b * Lk * stride + (i64)h * D;
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
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
#pragma unroll
      for (int np = 0; np < FLASH_BN / 16; ++np) {
        unsigned bk[4];
        const int row = np * 16 + (lane % 8) + (lane / 16) * 8;
        ldmatrix_x4(bk, tile_addr<D>(kt, row, kc * 2 + (lane / 8) % 2));
        mma_bf16(s[2 * np], qf[kc], bk[0], bk[1]);
        mma_bf16(s[2 * np + 1], qf[kc], bk[2], bk[3]);
      }
    }

    const int keyBase = t * FLASH_BN + (lane % 4) * 2;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tileMax = NEG_INF;
#pragma unroll
      for (int nt = 0; nt < FLASH_BN / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const bool valid = keyBase + nt * 8 + e < Lk;
          const float x = valid ? s[nt][2 * r + e] * scaleLog2 : NEG_INF;
          s[nt][2 * r + e] = x;
          tileMax = fmaxf(tileMax, x);
        }
      }
      tileMax = fmaxf(tileMax, __shfl_xor_sync(FULL_MASK, tileMax, 1));
      tileMax = fmaxf(tileMax, __shfl_xor_sync(FULL_MASK, tileMax, 2));
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
      pa[0] = pack_bf16(s[2 * kc][0], s[2 * kc][1]);
      pa[1] = pack_bf16(s[2 * kc][2], s[2 * kc][3]);
      pa[2] = pack_bf16(s[2 * kc + 1][0], s[2 * kc + 1][1]);
      pa[3] = pack_bf16(s[2 * kc + 1][2], s[2 * kc + 1][3]);
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        unsigned bv[4];
        const int row = kc * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
        ldmatrix_x4_trans(bv, tile_addr<D>(vt, row, dp * 2 + lane / 16));
        mma_bf16(acc[2 * dp], pa, bv[0], bv[1]);
        mma_bf16(acc[2 * dp + 1], pa, bv[2], bv[3]);
      }
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
      O* out = o + ((i64)b * Lq + row) * stride + (i64)h * D + (lane % 4) * 2;
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
