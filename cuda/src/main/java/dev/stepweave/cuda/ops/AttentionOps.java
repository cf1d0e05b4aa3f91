package dev.stepweave.cuda.ops;

import static dev.stepweave.cuda.ops.Operands.addr;

import dev.stepweave.cuda.cudnn.CudnnAttention;
import dev.stepweave.cuda.cudnn.CudnnRuntime;
import dev.stepweave.cuda.kernels.Kernels;
import dev.stepweave.cuda.kernels.Launch;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.Backend.AttentionForward;
import dev.stepweave.tensor.Backend.AttentionGradients;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.util.HashSet;
import java.util.Set;

/**
 * Attention of {@code [B, L, H, D]} q, k, v: cuDNN's fused attention or our flash kernel (BF16
 * mode, no bias), attention.cu, or GEMMs and a softmax for head dims the kernels cannot hold.
 */
public final class AttentionOps {
  private static final int SHARED_LIMIT = 48 * 1024;
  // flash.cu's head dims and tiles (FLASH_BM, FLASH_BN, 8 warps).
  private static final Set<Integer> FLASH_DIMS = Set.of(16, 32, 64, 128);
  private static final int FLASH_QUERY_TILE = 128;
  private static final int FLASH_KEY_TILE = 64;
  private static final int FLASH_THREADS = 256;
  private static final float LOG2_E = 1.4426950408889634f;
  // flash.cu's backward: 64 keys (the key pass) or query rows (the row and dQ passes) a block of 4
  // warps.
  private static final int FLASH_BACKWARD_TILE = 64;
  private static final int FLASH_BACKWARD_THREADS = 128;

  private final Operands operands;
  private final DeviceTensors tensors;
  private final Kernels kernels;
  private final CudnnAttention cudnn;
  private final MatrixOps matrix;
  private final NormOps norms;
  private final ElementwiseOps elementwise;
  private final Set<String> flashReady = new HashSet<>();

  AttentionOps(
      Operands operands,
      CudnnRuntime cudnnRuntime,
      MatrixOps matrix,
      NormOps norms,
      ElementwiseOps elementwise) {
    this.operands = operands;
    this.tensors = operands.tensors();
    this.kernels = tensors.kernels();
    this.cudnn = new CudnnAttention(tensors, cudnnRuntime);
    this.matrix = matrix;
    this.norms = norms;
    this.elementwise = elementwise;
  }

  void close() {
    cudnn.close();
  }

  public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor bias, float scale) {
    OpShapes.attention(q, k, v);
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3);
    int lk = k.dim(1), dv = v.dim(3);
    if (bias == null && operands.bf16Mode()) {
      // cuDNN's fused attention (BF16 out) when present and it takes the shape; else our kernels.
      Tensor fused = cudnn.attention(q, k, v, scale);
      if (fused != null) {
        return fused;
      }
    }
    Tensor out = tensors.empty(operands.keepsBf16(q) ? DType.BF16 : DType.F32, b, lq, h, dv);
    if (out.numel() == 0) {
      return out;
    }
    Tensor biasView =
        OpShapes.attentionBias(bias == null ? null : tensors.f32View(bias), b, h, lq, lk);
    if (bias == null && d == dv && lk > 0 && operands.bf16Mode() && FLASH_DIMS.contains(d)) {
      flash(q, k, v, out, scale);
      return out;
    }
    int warps = 16;
    int keyTile = 64;
    while (sharedBytes(keyTile, warps, d, dv) > SHARED_LIMIT && keyTile > 32) {
      keyTile /= 2;
    }
    while (sharedBytes(keyTile, warps, d, dv) > SHARED_LIMIT && warps > 4) {
      warps /= 2;
    }
    if (dv > 256 || sharedBytes(keyTile, warps, d, dv) > SHARED_LIMIT) {
      attentionByGemms(q, k, v, biasView, scale, out);
      return out;
    }
    Tensor qf = tensors.f32(q), kf = tensors.f32(k), vf = tensors.f32(v);
    Tensor outF32 = out.dtype() == DType.F32 ? out : tensors.empty(DType.F32, out.shape());
    try (Launch l = kernels.launch("attention.cu", "attention_f32")) {
      l.ptr(addr(qf)).ptr(addr(kf)).ptr(addr(vf)).ptr(addr(biasView)).ptr(addr(outF32));
      l.i32(lq).i32(lk).i32(h).i32(d).i32(dv).f32(scale);
      for (int i = 0; i < 4; i++) {
        l.i64(biasView == null ? 0 : biasView.stride(i));
      }
      l.i32(keyTile);
      l.run(
          kernels.context().stream(),
          (lq + warps - 1) / warps,
          b * h,
          1,
          warps * 32,
          sharedBytes(keyTile, warps, d, dv));
    }
    tensors.releaseDerived(qf, q);
    tensors.releaseDerived(kf, k);
    tensors.releaseDerived(vf, v);
    if (outF32 != out) {
      tensors.copy(outF32, out);
      tensors.releaseDerived(outF32, out);
    }
    return out;
  }

  /**
   * Attention for head dims the kernels' shared memory cannot hold (the Wan VAE's single 384-wide
   * head): F32 GEMMs for the scores and the weighted sum, a row softmax between, over query chunks
   * so the score matrix stays within {@link CudaOps#SCRATCH_BUDGET_BYTES}.
   */
  private void attentionByGemms(
      Tensor q, Tensor k, Tensor v, Tensor biasView, float scale, Tensor out) {
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), lk = k.dim(1);
    Tensor keysT = tensors.onDevice(k).permute(0, 2, 3, 1); // [B, H, D, Lk]
    Tensor values = tensors.onDevice(v).permute(0, 2, 1, 3); // [B, H, Lk, Dv]
    long rowBytes = (long) b * h * Math.max(lk, 1) * Float.BYTES;
    int chunk = (int) Math.max(1, Math.min(lq, CudaOps.SCRATCH_BUDGET_BYTES / rowBytes));
    for (int from = 0; from < lq; from += chunk) {
      int to = Math.min(lq, from + chunk);
      Tensor queries = tensors.onDevice(q).slice(1, from, to).permute(0, 2, 1, 3);
      Tensor scores = elementwise.affine(matrix.matmul(queries, keysT), scale, 0f);
      if (biasView != null) {
        scores = elementwise.add(scores, biasView.slice(2, from, to));
      }
      Tensor heads = matrix.matmul(norms.softmax(scores), values); // [B, H, chunk, Dv]
      tensors.copy(heads.permute(0, 2, 1, 3), out.slice(1, from, to));
    }
  }

  /** What runs {@link #attention} without a bias for these inputs, in words. */
  public String attentionPath(Tensor q, Tensor k, Tensor v) {
    OpShapes.attention(q, k, v);
    return operands.bf16Mode() ? cudnn.describe(q, k, v) : "attention.cu (F32 precision)";
  }

  /** flash.cu alone, whatever cuDNN offers: tests and benchmarks compare the two. */
  public Tensor flashAttention(Tensor q, Tensor k, Tensor v, float scale) {
    OpShapes.attention(q, k, v);
    int d = q.dim(3);
    if (d != v.dim(3) || !FLASH_DIMS.contains(d) || k.dim(1) == 0) {
      throw new UnsupportedOperationException(
          "flash.cu has no kernel for " + q + ", " + k + ", " + v);
    }
    Tensor out = tensors.empty(DType.F32, q.dim(0), q.dim(1), q.dim(2), d);
    if (out.numel() > 0) {
      flash(q, k, v, out, scale);
    }
    return out;
  }

  /**
   * Tensor-core attention (flash.cu) of validated [B, L, H, D] q, k, v into {@code out} (F32 or
   * BF16).
   */
  private void flash(Tensor q, Tensor k, Tensor v, Tensor out, float scale) {
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3), lk = k.dim(1);
    String kernel = "flash_bf16_d" + d + "_" + DeviceTensors.code(out.dtype());
    int shared = (FLASH_QUERY_TILE + 4 * FLASH_KEY_TILE) * d * 2;
    if (flashReady.add(kernel)) {
      kernels.allowSharedMemory("flash.cu", kernel, shared);
    }
    Tensor qb = operands.bf16(q), kb = operands.bf16(k), vb = operands.bf16(v);
    try (Launch l = kernels.launch("flash.cu", kernel)) {
      l.ptr(addr(qb)).ptr(addr(kb)).ptr(addr(vb)).ptr(addr(out));
      l.i32(lq).i32(lk).i32(h).f32(scale * LOG2_E);
      l.run(
          kernels.context().stream(),
          (lq + FLASH_QUERY_TILE - 1) / FLASH_QUERY_TILE,
          b * h,
          1,
          FLASH_THREADS,
          shared);
    }
    tensors.releaseDerived(qb, q);
    tensors.releaseDerived(kb, k);
    tensors.releaseDerived(vb, v);
  }

  /**
   * {@link dev.stepweave.tensor.Backend#attentionBackward} through flash.cu's backward kernels
   * (FlashAttention-2's in three passes, each row's term D from the backward's own P and dP, dQ by
   * query rows without atomics, so the gradients are deterministic) where they run: the BF16 mode,
   * no bias, q, k and v of one head dim flash.cu holds, some queries and keys. The inputs and dO
   * are read in BF16 (rounded once where they are F32); P and dS are rounded to BF16 for their
   * products (dS into dK's as two BF16 parts), F32 everywhere else; the gradients are F32. Null
   * elsewhere.
   */
  public AttentionGradients flashBackward(AttentionForward forward, Tensor gradOut) {
    Tensor q = forward.q(), k = forward.k(), v = forward.v();
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3), lk = k.dim(1);
    if (!operands.bf16Mode()
        || forward.bias() != null
        || d != v.dim(3)
        || !FLASH_DIMS.contains(d)
        || (long) b * h * lq * lk == 0) {
      return null;
    }
    Tensor dO = forward.gradientOfOutput(gradOut);
    String rows = "flash_bwd_rows_d" + d, keys = "flash_bwd_keys_d" + d, dqs = "flash_bwd_dq_d" + d;
    // flash.cu's tiles: 32 query rows (key pass) and 32 keys (dQ pass) at head dim 128, else 64.
    int tile = d == 128 ? 32 : 64;
    int rowsShared = 4 * FLASH_BACKWARD_TILE * d * 2;
    int keysShared = (2 * FLASH_BACKWARD_TILE + 2 * tile) * d * 2 + 2 * tile * Float.BYTES;
    int dqShared = (2 * FLASH_BACKWARD_TILE + 2 * tile) * d * 2;
    if (flashReady.add(rows)) {
      kernels.allowSharedMemory("flash.cu", rows, rowsShared);
      kernels.allowSharedMemory("flash.cu", keys, keysShared);
      kernels.allowSharedMemory("flash.cu", dqs, dqShared);
    }
    Tensor qb = operands.bf16(q), kb = operands.bf16(k), vb = operands.bf16(v);
    Tensor ob = operands.bf16(dO);
    Tensor lse = tensors.empty(DType.F32, b * h, lq);
    Tensor rowTerms = tensors.empty(DType.F32, b * h, lq);
    Tensor dq = tensors.empty(DType.F32, q.shape());
    Tensor dk = tensors.empty(DType.F32, k.shape());
    Tensor dv = tensors.empty(DType.F32, v.shape());
    float scaleLog2 = forward.scale() * LOG2_E;
    int queryBlocks = (lq + FLASH_BACKWARD_TILE - 1) / FLASH_BACKWARD_TILE;
    try (Launch l = kernels.launch("flash.cu", rows)) {
      l.ptr(addr(qb)).ptr(addr(kb)).ptr(addr(vb)).ptr(addr(ob)).ptr(addr(lse)).ptr(addr(rowTerms));
      l.i32(lq).i32(lk).i32(h).f32(scaleLog2);
      l.run(kernels.context().stream(), queryBlocks, b * h, 1, FLASH_BACKWARD_THREADS, rowsShared);
    }
    try (Launch l = kernels.launch("flash.cu", keys)) {
      l.ptr(addr(qb)).ptr(addr(kb)).ptr(addr(vb)).ptr(addr(ob)).ptr(addr(lse)).ptr(addr(rowTerms));
      l.ptr(addr(dk)).ptr(addr(dv));
      l.i32(lq).i32(lk).i32(h).f32(scaleLog2).f32(forward.scale());
      l.run(
          kernels.context().stream(),
          (lk + FLASH_BACKWARD_TILE - 1) / FLASH_BACKWARD_TILE,
          b * h,
          1,
          FLASH_BACKWARD_THREADS,
          keysShared);
    }
    try (Launch l = kernels.launch("flash.cu", dqs)) {
      l.ptr(addr(qb)).ptr(addr(kb)).ptr(addr(vb)).ptr(addr(ob)).ptr(addr(lse)).ptr(addr(rowTerms));
      l.ptr(addr(dq));
      l.i32(lq).i32(lk).i32(h).f32(scaleLog2).f32(forward.scale());
      l.run(kernels.context().stream(), queryBlocks, b * h, 1, FLASH_BACKWARD_THREADS, dqShared);
    }
    tensors.releaseDerived(qb, q);
    tensors.releaseDerived(kb, k);
    tensors.releaseDerived(vb, v);
    tensors.releaseDerived(ob, dO);
    return new AttentionGradients(dq, dk, dv, null);
  }

  private static int sharedBytes(int keyTile, int warps, int d, int dv) {
    return (keyTile * (d + 1) + keyTile * dv + warps * d) * 4;
  }
}
