// Scaled dot-product attention by online softmax (flash-attention style, F32, correctness first).
// q [B, Lq, H, D], k [B, Lk, H, D], v [B, Lk, H, Dv], o [B, Lq, H, Dv], all contiguous.
// One warp per query row; the block's warps share K/V tiles staged in shared memory. In a tile,
// lane j scores key j, the warp reduces max and sum with shuffles, and each lane accumulates the
// output channels lane, lane + 32, ... (Dv <= 256).
// bias (optional) is read at b*bsb + h*bsh + i*bsq + j*bsk (stride 0 where it broadcasts).
#define MAX_DV_PER_LANE 8

extern "C" __global__ void attention_f32(const float* q, const float* k, const float* v,
                                         const float* bias, float* o, int Lq, int Lk, int H,
                                         int D, int Dv, float scale, i64 bsb, i64 bsh, i64 bsq,
                                         i64 bsk, int keyTile) {
  extern __shared__ float smem[];
  const int warps = blockDim.x / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int b = blockIdx.y / H, h = blockIdx.y % H;
  const int row = blockIdx.x * warps + warp;
  const bool active = row < Lq;
  const int kld = D + 1;  // padded so lanes reading different keys hit different banks
  float* ks = smem;
  float* vs = ks + keyTile * kld;
  float* myq = vs + keyTile * Dv + warp * D;

  if (active) {
    for (int c = lane; c < D; c += 32) myq[c] = q[(((i64)b * Lq + row) * H + h) * D + c];
  }
  float acc[MAX_DV_PER_LANE];
#pragma unroll
  for (int r = 0; r < MAX_DV_PER_LANE; ++r) acc[r] = 0.0f;
  float m = NEG_INF, l = 0.0f;

  for (int j0 = 0; j0 < Lk; j0 += keyTile) {
    const int len = min(keyTile, Lk - j0);
    __syncthreads();
    for (int e = threadIdx.x; e < len * D; e += blockDim.x) {
      int j = e / D, c = e % D;
      ks[j * kld + c] = k[(((i64)b * Lk + j0 + j) * H + h) * D + c];
    }
    for (int e = threadIdx.x; e < len * Dv; e += blockDim.x) {
      int j = e / Dv, c = e % Dv;
      vs[j * Dv + c] = v[(((i64)b * Lk + j0 + j) * H + h) * Dv + c];
    }
    __syncthreads();
    if (!active) continue;
    for (int s0 = 0; s0 < len; s0 += 32) {
      const int j = s0 + lane;
      float score = NEG_INF;
      if (j < len) {
        float dot = 0.0f;
        for (int c = 0; c < D; ++c) dot = fmaf(myq[c], ks[j * kld + c], dot);
        score = dot * scale;
        if (bias) score += bias[b * bsb + h * bsh + row * bsq + (i64)(j0 + j) * bsk];
      }
      float tileMax = score;
      for (int off = 16; off > 0; off >>= 1)
        tileMax = fmaxf(tileMax, __shfl_xor_sync(FULL_MASK, tileMax, off));
      const float newM = fmaxf(m, tileMax);
      if (newM == NEG_INF) continue;  // every key so far is masked out
      const float corr = expf(m - newM);
      const float p = j < len ? expf(score - newM) : 0.0f;
      float psum = p;
      for (int off = 16; off > 0; off >>= 1) psum += __shfl_xor_sync(FULL_MASK, psum, off);
      l = l * corr + psum;
#pragma unroll
      for (int r = 0; r < MAX_DV_PER_LANE; ++r) acc[r] *= corr;
      const int count = min(32, len - s0);
      for (int jj = 0; jj < count; ++jj) {
        const float pj = __shfl_sync(FULL_MASK, p, jj);
        const float* vrow = vs + (s0 + jj) * Dv;
#pragma unroll
        for (int r = 0; r < MAX_DV_PER_LANE; ++r) {
          const int c = lane + 32 * r;
          if (c < Dv) acc[r] = fmaf(pj, vrow[c], acc[r]);
        }
      }
      m = newM;
    }
  }
  if (active) {
#pragma unroll
    for (int r = 0; r < MAX_DV_PER_LANE; ++r) {
      const int c = lane + 32 * r;
      if (c < Dv) o[(((i64)b * Lq + row) * H + h) * Dv + c] = acc[r] / l;
    }
  }
}
