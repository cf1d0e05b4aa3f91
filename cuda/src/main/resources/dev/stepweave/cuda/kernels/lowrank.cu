// Gathers low-rank adapter factors into the padded stacks the batched GEMMs of LowRankOps read.
// Block b of the stacks is one group of batch rows sharing its updates: down [R, in] is the
// concatenation of its updates' down factors along the rank, up [out, R] of their up factors with
// each update's scale folded in; rank positions no update covers are zero (a block with fewer
// updates, or none, adds exactly nothing). Factors are read as F32 or BF16, each per its entry.

#define LOW_RANK_BLOCKS 63
#define LOW_RANK_ENTRIES 64

struct LowRankEntry {
  const void* down;  // [rank, in]
  const void* up;    // [out, rank]
  float scale;
  int rank;
  int offset;  // first stack rank position of this update within its block
  int bf16;    // the factors' dtype: 1 BF16, 0 F32
};

// What one launch gathers (by value, so a CUDA graph records it): blocks [0, blocks) of the stacks
// it is given, block b's entries being e[start[b]] .. e[start[b + 1] - 1], in rank order.
struct LowRankTable {
  int blocks;
  int entries;
  int start[LOW_RANK_BLOCKS + 1];
  LowRankEntry e[LOW_RANK_ENTRIES];
};

__device__ __forceinline__ float load_factor(const void* p, i64 i, int bf16) {
  return bf16 ? load_f((const bf16_t*)p + i) : load_f((const float*)p + i);
}

// The entry of block b that covers stack rank position r, or -1 (padding).
__device__ __forceinline__ int covering(const LowRankTable& t, int b, int r) {
  for (int j = t.start[b]; j < t.start[b + 1]; ++j) {
    if (r >= t.e[j].offset && r < t.e[j].offset + t.e[j].rank) return j;
  }
  return -1;
}

// One thread per stack element: down stack [blocks, R, in], then up stack [blocks, out, R].
template <typename T>
__device__ void gather_low_rank(const LowRankTable& t, T* down, T* up, int R, int in, int out) {
  i64 downSize = (i64)R * in, upSize = (i64)out * R;
  i64 downAll = downSize * t.blocks;
  GRID_STRIDE(i, downAll + upSize * t.blocks) {
    float v = 0.0f;
    if (i < downAll) {
      int b = (int)idiv(i, downSize);
      i64 k = i - b * downSize;
      int r = (int)idiv(k, in), c = (int)(k - (i64)r * in);
      int j = covering(t, b, r);
      if (j >= 0) v = load_factor(t.e[j].down, (i64)(r - t.e[j].offset) * in + c, t.e[j].bf16);
      store_f(down + i, v);
    } else {
      i64 u = i - downAll;
      int b = (int)idiv(u, upSize);
      i64 k = u - b * upSize;
      int o = (int)idiv(k, R), r = (int)(k - (i64)o * R);
      int j = covering(t, b, r);
      if (j >= 0) {
        v = t.e[j].scale *
            load_factor(t.e[j].up, (i64)o * t.e[j].rank + (r - t.e[j].offset), t.e[j].bf16);
      }
      store_f(up + u, v);
    }
  }
}

extern "C" __global__ void gather_low_rank_f32(LowRankTable t, float* down, float* up, int R,
                                               int in, int out) {
  gather_low_rank<float>(t, down, up, R, in, out);
}
extern "C" __global__ void gather_low_rank_bf16(LowRankTable t, bf16_t* down, bf16_t* up, int R,
                                                int in, int out) {
  gather_low_rank<bf16_t>(t, down, up, R, in, out);
}
