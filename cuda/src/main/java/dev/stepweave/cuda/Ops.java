package dev.stepweave.cuda;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** The compute operations of {@link CudaBackend}: argument checks, then kernels and GEMMs. */
final class Ops {
  // Extra map codes of elementwise.cu, after Backend.UnaryOp's ordinals.
  static final int GELU_ERF = 20;
  static final int GELU_TANH = 21;
  static final int SILU = 22;
  static final int AFFINE = 23;
  static final int CLAMP = 24;

  private static final long IM2COL_BUDGET_BYTES = 512L << 20;
  private static final int SHARED_LIMIT = 48 * 1024;
  // flash.cu's head dims and tiles (FLASH_BM, FLASH_BN, 8 warps).
  private static final Set<Integer> FLASH_DIMS = Set.of(16, 32, 64, 128);
  private static final int FLASH_QUERY_TILE = 128;
  private static final int FLASH_KEY_TILE = 64;
  private static final int FLASH_THREADS = 256;
  private static final float LOG2_E = 1.4426950408889634f;

  private final CudaBackend cb;
  private final Kernels kernels;
  private final Gemm gemm;
  private final CudnnRuntime cudnnRuntime;
  private final CudnnAttention cudnn;
  private final CudnnConvolution cudnnConv;
  private final Set<String> flashReady = new HashSet<>();

  Ops(CudaBackend cb, Kernels kernels, Gemm gemm) {
    this.cb = cb;
    this.kernels = kernels;
    this.gemm = gemm;
    this.cudnnRuntime = new CudnnRuntime(cb);
    this.cudnn = new CudnnAttention(cb, cudnnRuntime);
    this.cudnnConv = new CudnnConvolution(cb, kernels, cudnnRuntime);
  }

  void close() {
    cudnn.close();
    cudnnConv.close();
    cudnnRuntime.close();
  }

  private static long addr(Tensor t) {
    return t == null ? 0L : CudaBackend.address(t);
  }

  // ---- linear algebra -------------------------------------------------------------------------

  /**
   * {@code x @ w^T + bias}, then GELU (tanh) when {@code gelu}. The result is BF16 for a BF16 x in
   * the BF16 mode (written by the GEMM when the weight is BF16 too), else F32.
   */
  Tensor linear(Tensor x, Tensor w, Tensor bias, boolean gelu) {
    if (x.rank() < 1 || w.rank() != 2 || x.dim(-1) != w.dim(1)) {
      throw new IllegalArgumentException("linear of x " + x + " with weight " + w + " [out, in]");
    }
    int k = w.dim(1), n = w.dim(0);
    if (bias != null && bias.numel() != n) {
      throw new IllegalArgumentException("linear bias " + bias + " for " + n + " outputs");
    }
    int m = 1;
    for (int i = 0; i < x.rank() - 1; i++) {
      m = Math.multiplyExact(m, x.dim(i));
    }
    int[] shape = x.shape();
    shape[shape.length - 1] = n;
    DType outType = keepsBf16(x) ? DType.BF16 : DType.F32;
    if (Tensor.numel(shape) == 0) {
      return cb.empty(outType, shape);
    }
    if (k == 0) {
      Tensor zero = cb.zeros(DType.F32, shape);
      Tensor r = bias == null ? zero : cb.add(zero, bias);
      r = gelu ? map(r, GELU_TANH, 0, 0) : r;
      return r.dtype() == outType ? r : cb.convert(r, outType);
    }
    boolean bf16 = cb.onDevice(w).dtype() == DType.BF16;
    boolean bf16Out = bf16 && outType == DType.BF16;
    Tensor xd = bf16 ? bf16(x) : cb.f32(x);
    Tensor wd = bf16 ? cb.contiguous(w) : cb.f32(w);
    Tensor bd = bias == null ? null : bf16Out ? bf16(bias) : cb.f32(bias);
    Tensor out = cb.empty(bf16Out ? DType.BF16 : DType.F32, shape);
    Gemm.Epilogue epilogue =
        bd == null
            ? (gelu ? Gemm.Epilogue.GELU_TANH : Gemm.Epilogue.NONE)
            : (gelu ? Gemm.Epilogue.GELU_TANH_BIAS : Gemm.Epilogue.BIAS);
    Gemm.Shape s =
        new Gemm.Shape(m, n, k, false, k, true, k, n, 1, 0, 0, 0, bf16, bf16Out, epilogue);
    gemm.run(s, addr(xd), addr(wd), addr(out), addr(bd));
    cb.releaseDerived(xd, x);
    cb.releaseDerived(wd, w);
    if (bias != null) {
      cb.releaseDerived(bd, bias);
    }
    if (out.dtype() != outType) {
      // A BF16 x with F32 weights: the GEMM ran in F32.
      Tensor converted = cb.convert(out, outType);
      cb.releaseDerived(out, converted);
      return converted;
    }
    return out;
  }

  Tensor matmul(Tensor a, Tensor b) {
    int[] batch = OpShapes.matmulBatch(a, b);
    int m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
    Tensor av = cb.f32(cb.onDevice(a).expand(OpShapes.withMatrix(batch, m, k)));
    Tensor bv = cb.f32(cb.onDevice(b).expand(OpShapes.withMatrix(batch, k, n)));
    int[] outShape = OpShapes.withMatrix(batch, m, n);
    long count = Tensor.numel(batch);
    if (count == 0 || m == 0 || n == 0 || k == 0) {
      return cb.zeros(DType.F32, outShape);
    }
    Tensor out = cb.empty(DType.F32, outShape);
    Gemm.Shape s =
        new Gemm.Shape(
            m,
            n,
            k,
            false,
            k,
            false,
            n,
            n,
            Math.toIntExact(count),
            (long) m * k,
            (long) k * n,
            (long) m * n,
            false,
            false,
            Gemm.Epilogue.NONE);
    gemm.run(s, addr(av), addr(bv), addr(out), 0L);
    return out;
  }

  // ---- attention ------------------------------------------------------------------------------

  Tensor attention(Tensor q, Tensor k, Tensor v, Tensor bias, float scale) {
    OpShapes.attention(q, k, v);
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3);
    int lk = k.dim(1), dv = v.dim(3);
    if (bias == null && cb.precision() == Precision.BF16) {
      // cuDNN's fused attention (BF16 out) when present and it takes the shape; else our kernels.
      Tensor fused = cudnn.attention(q, k, v, scale);
      if (fused != null) {
        return fused;
      }
    }
    Tensor out = cb.empty(keepsBf16(q) ? DType.BF16 : DType.F32, b, lq, h, dv);
    if (out.numel() == 0) {
      return out;
    }
    Tensor biasView = null;
    if (bias != null) {
      try {
        biasView = cb.f32View(bias).expand(b, h, lq, lk);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "attention bias "
                + Arrays.toString(bias.shape())
                + " does not broadcast to [B, H, Lq, Lk] = "
                + Arrays.toString(new int[] {b, h, lq, lk}));
      }
    }
    if (bias == null
        && d == dv
        && lk > 0
        && cb.precision() == Precision.BF16
        && FLASH_DIMS.contains(d)) {
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
    Tensor qf = cb.f32(q), kf = cb.f32(k), vf = cb.f32(v);
    Tensor outF32 = out.dtype() == DType.F32 ? out : cb.empty(DType.F32, out.shape());
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
    cb.releaseDerived(qf, q);
    cb.releaseDerived(kf, k);
    cb.releaseDerived(vf, v);
    if (outF32 != out) {
      cb.copy(outF32, out);
      cb.releaseDerived(outF32, out);
    }
    return out;
  }

  /**
   * Attention for head dims the kernels' shared memory cannot hold (the Wan VAE's single 384-wide
   * head): F32 GEMMs for the scores and the weighted sum, a row softmax between, over query chunks
   * so the score matrix stays within {@link #IM2COL_BUDGET_BYTES}.
   */
  private void attentionByGemms(
      Tensor q, Tensor k, Tensor v, Tensor biasView, float scale, Tensor out) {
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), lk = k.dim(1);
    Tensor keysT = cb.onDevice(k).permute(0, 2, 3, 1); // [B, H, D, Lk]
    Tensor values = cb.onDevice(v).permute(0, 2, 1, 3); // [B, H, Lk, Dv]
    long rowBytes = (long) b * h * Math.max(lk, 1) * Float.BYTES;
    int chunk = (int) Math.max(1, Math.min(lq, IM2COL_BUDGET_BYTES / rowBytes));
    for (int from = 0; from < lq; from += chunk) {
      int to = Math.min(lq, from + chunk);
      Tensor queries = cb.onDevice(q).slice(1, from, to).permute(0, 2, 1, 3);
      Tensor scores = map(matmul(queries, keysT), AFFINE, scale, 0f);
      if (biasView != null) {
        scores = cb.add(scores, biasView.slice(2, from, to));
      }
      Tensor heads = matmul(softmax(scores), values); // [B, H, chunk, Dv]
      cb.copy(heads.permute(0, 2, 1, 3), out.slice(1, from, to));
    }
  }

  /** What runs {@link #attention} without a bias for these inputs, in words. */
  String attentionPath(Tensor q, Tensor k, Tensor v) {
    OpShapes.attention(q, k, v);
    return cb.precision() == Precision.BF16
        ? cudnn.describe(q, k, v)
        : "attention.cu (F32 precision)";
  }

  /** flash.cu alone, whatever cuDNN offers: tests and benchmarks compare the two. */
  Tensor flashAttention(Tensor q, Tensor k, Tensor v, float scale) {
    OpShapes.attention(q, k, v);
    int d = q.dim(3);
    if (d != v.dim(3) || !FLASH_DIMS.contains(d) || k.dim(1) == 0) {
      throw new UnsupportedOperationException(
          "flash.cu has no kernel for " + q + ", " + k + ", " + v);
    }
    Tensor out = cb.empty(DType.F32, q.dim(0), q.dim(1), q.dim(2), d);
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
    String kernel = "flash_bf16_d" + d + "_" + CudaBackend.code(out.dtype());
    int shared = (FLASH_QUERY_TILE + 4 * FLASH_KEY_TILE) * d * 2;
    if (flashReady.add(kernel)) {
      kernels.allowSharedMemory("flash.cu", kernel, shared);
    }
    Tensor qb = bf16(q), kb = bf16(k), vb = bf16(v);
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
    cb.releaseDerived(qb, q);
    cb.releaseDerived(kb, k);
    cb.releaseDerived(vb, v);
  }

  /** {@code t} as contiguous BF16 on this device (itself when it already is). */
  private Tensor bf16(Tensor t) {
    Tensor here = cb.onDevice(t);
    return here.dtype() == DType.BF16 && here.isContiguous() ? here : cb.convert(here, DType.BF16);
  }

  private static int sharedBytes(int keyTile, int warps, int d, int dv) {
    return (keyTile * (d + 1) + keyTile * dv + warps * d) * 4;
  }

  // ---- convolution ----------------------------------------------------------------------------

  Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    if (x.rank() != 5 || w.rank() != 5 || x.dim(1) != w.dim(1)) {
      throw new IllegalArgumentException(
          "conv3d of x " + x + " [B, C, T, H, W] with weight " + w + " [O, C, kt, kh, kw]");
    }
    if (stride.length != 3 || padding.length != 3) {
      throw new IllegalArgumentException(
          "conv3d stride " + Arrays.toString(stride) + " and padding need 3 entries");
    }
    int batch = x.dim(0), c = x.dim(1), t = x.dim(2), hh = x.dim(3), ww = x.dim(4);
    int o = w.dim(0), kt = w.dim(2), kh = w.dim(3), kw = w.dim(4);
    int to = (t + 2 * padding[0] - kt) / stride[0] + 1;
    int ho = (hh + 2 * padding[1] - kh) / stride[1] + 1;
    int wo = (ww + 2 * padding[2] - kw) / stride[2] + 1;
    if (to <= 0 || ho <= 0 || wo <= 0) {
      throw new IllegalArgumentException("conv3d kernel " + w + " larger than padded input " + x);
    }
    if (bias != null && bias.numel() != o) {
      throw new IllegalArgumentException("conv3d bias " + bias + " for " + o + " channels");
    }
    if (cb.precision() == Precision.BF16) {
      // cuDNN's convolution (BF16 out) when present and it takes the shape; else im2col in F32.
      Tensor fast = cudnnConv.conv3d(x, w, bias, stride, padding);
      if (fast != null) {
        return fast;
      }
    }
    Tensor out = cb.empty(DType.F32, batch, o, to, ho, wo);
    Tensor xf = cb.f32(x);
    Tensor wf = cb.f32(w);
    long plane = (long) ho * wo;
    int kk = c * kt * kh * kw;
    boolean pointwise =
        kt * kh * kw == 1
            && Arrays.equals(stride, new int[] {1, 1, 1})
            && Arrays.equals(padding, new int[3]);
    int nt = (int) Math.max(1, Math.min(to, IM2COL_BUDGET_BYTES / Math.max(1, kk * plane * 4)));
    Tensor col = pointwise ? null : cb.empty(DType.F32, kk, Math.toIntExact(nt * plane));
    MemorySegment geometry = null;
    for (int b = 0; b < batch; b++) {
      long xb = addr(xf) + (long) b * c * t * hh * ww * 4;
      long ob = addr(out) + (long) b * o * to * plane * 4;
      if (pointwise) {
        int n = Math.toIntExact(to * plane);
        gemm.run(
            new Gemm.Shape(
                o, n, kk, false, kk, false, n, n, 1, 0, 0, 0, false, false, Gemm.Epilogue.NONE),
            addr(wf),
            xb,
            ob,
            0L);
        continue;
      }
      for (int t0 = 0; t0 < to; t0 += nt) {
        int chunk = Math.min(nt, to - t0);
        try (Launch l = kernels.launch("misc.cu", "im2col3d_f32")) {
          MemorySegment g = l.arena().allocate(16 * 4, 4);
          int[] v = {
            c,
            t,
            hh,
            ww,
            kt,
            kh,
            kw,
            stride[0],
            stride[1],
            stride[2],
            padding[0],
            padding[1],
            padding[2],
            to,
            ho,
            wo
          };
          MemorySegment.copy(v, 0, g, ValueLayout.JAVA_INT, 0, v.length);
          l.ptr(xb).ptr(addr(col)).struct(g).i32(t0).i32(chunk);
          kernels.elementwise(l, (long) kk * chunk * plane);
        }
        int n = Math.toIntExact(chunk * plane);
        gemm.run(
            new Gemm.Shape(
                o,
                n,
                kk,
                false,
                kk,
                false,
                n,
                to * plane,
                1,
                0,
                0,
                0,
                false,
                false,
                Gemm.Epilogue.NONE),
            addr(wf),
            addr(col),
            ob + t0 * plane * 4,
            0L);
      }
    }
    cb.releaseDerived(col, xf);
    cb.releaseDerived(xf, x);
    cb.releaseDerived(wf, w);
    if (bias != null) {
      Tensor bf = cb.f32(bias);
      long n = out.numel();
      try (Launch l = kernels.launch("misc.cu", "channel_bias_f32")) {
        l.ptr(addr(out)).ptr(addr(bf)).i64(n).i64((long) to * plane).i32(o);
        kernels.elementwise(l, n);
      }
    }
    return out;
  }

  /**
   * What runs {@link #conv3d} for these (valid) arguments, in words; in the BF16 mode this chooses
   * cuDNN's plan for the shape if it is not chosen yet.
   */
  String conv3dPath(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    return cb.precision() == Precision.BF16
        ? cudnnConv.describe(x, w, bias, stride, padding)
        : "im2col + cuBLASLt F32 GEMM (F32 precision)";
  }

  /** Every convolution shape the BF16 mode has seen and what ran it, one per line. */
  String conv3dPaths() {
    return cb.precision() == Precision.BF16
        ? cudnnConv.paths()
        : "im2col + cuBLASLt F32 GEMM (F32 precision)";
  }

  // ---- normalisation --------------------------------------------------------------------------

  private Tensor optionalRowParam(Tensor p, int n, String what) {
    if (p == null) {
      return null;
    }
    if (p.numel() != n) {
      throw new IllegalArgumentException(what + " has " + p.numel() + " elements, expected " + n);
    }
    return cb.f32(p);
  }

  private static long rows(Tensor x) {
    int n = x.rank() == 0 ? 1 : x.dim(-1);
    return n == 0 ? 0 : x.numel() / n;
  }

  Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
    int n = x.dim(-1);
    Tensor w = optionalRowParam(weight, n, "layerNorm weight");
    Tensor b = optionalRowParam(bias, n, "layerNorm bias");
    return layerNorm(x, w, b, null, null, eps);
  }

  /** {@code layerNorm(x) · (1 + scale) + shift} in one pass (norms.cu's RowModulation). */
  Tensor modulatedLayerNorm(Tensor x, Tensor shift, Tensor scale, float eps) {
    return layerNorm(x, null, null, shift, scale, eps);
  }

  private Tensor layerNorm(Tensor x, Tensor w, Tensor b, Tensor shift, Tensor scale, float eps) {
    int n = x.dim(-1);
    Tensor xd = activation(x);
    Tensor out = cb.empty(xd.dtype(), x.shape());
    RowVectors mod = shift == null ? null : rowVectors(x.shape(), shift, scale);
    if (rows(x) > 0) {
      boolean packed = packable(n, xd, out);
      String kernel =
          (packed ? "layer_norm_packed_" : "layer_norm_") + CudaBackend.code(xd.dtype());
      try (Launch l = kernels.launch("norms.cu", kernel)) {
        MemorySegment m = l.arena().allocate(32, 8);
        if (mod != null) {
          m.set(ValueLayout.JAVA_LONG, 0, addr(mod.data().get(0)));
          m.set(ValueLayout.JAVA_LONG, 8, addr(mod.data().get(1)));
          m.set(ValueLayout.JAVA_LONG, 16, mod.groupStride());
          m.set(ValueLayout.JAVA_LONG, 24, mod.rowsPerGroup());
        } else {
          m.set(ValueLayout.JAVA_LONG, 24, 1L);
        }
        l.ptr(addr(xd)).ptr(addr(w)).ptr(addr(b)).struct(m).ptr(addr(out)).i32(n).f32(eps);
        kernels.rows(l, rows(x), packed ? n / pack(xd) : n);
      }
    }
    cb.releaseDerived(xd, x);
    if (mod != null) {
      mod.release(cb, shift, scale);
    }
    return out;
  }

  Tensor rmsNorm(Tensor x, Tensor weight, float eps) {
    int n = x.dim(-1);
    Tensor w = optionalRowParam(weight, n, "rmsNorm weight");
    Tensor xd = activation(x);
    Tensor out = cb.empty(xd.dtype(), x.shape());
    if (rows(x) > 0) {
      boolean packed = packable(n, xd, out);
      String kernel = (packed ? "rms_norm_packed_" : "rms_norm_") + CudaBackend.code(xd.dtype());
      try (Launch l = kernels.launch("norms.cu", kernel)) {
        l.ptr(addr(xd)).ptr(addr(w)).ptr(addr(out)).i32(n).f32(eps);
        kernels.rows(l, rows(x), packed ? n / pack(xd) : n);
      }
    }
    cb.releaseDerived(xd, x);
    return out;
  }

  /** rmsNorm over {@code [B, L, H·D]} rows, then RoPE per head, in one pass (norms.cu). */
  Tensor rmsNormRope(Tensor x, Tensor weight, float eps, int heads, Tensor cos, Tensor sin) {
    int n = x.dim(-1);
    if (x.rank() != 3 || heads <= 0 || n % heads != 0 || (n / heads) % 2 != 0) {
      throw new IllegalArgumentException(
          "rmsNormRope wants [B, L, H·D] with " + heads + " heads of even D, got " + x);
    }
    int l = x.dim(1), half = n / heads / 2;
    for (Tensor t : List.of(cos, sin)) {
      if (t.rank() != 2 || t.dim(0) != l || t.dim(1) != half) {
        throw new IllegalArgumentException(
            "rope table " + t + " must be [L, D/2] = [" + l + ", " + half + "] for " + x);
      }
    }
    Tensor w = optionalRowParam(weight, n, "rmsNorm weight");
    Tensor xd = activation(x), cf = cb.f32(cos), sf = cb.f32(sin);
    Tensor out = cb.empty(xd.dtype(), x.dim(0), l, heads, n / heads);
    if (rows(x) > 0) {
      // Packs hold whole pairs of one head when D/2 is a multiple of pack/2; else pairs.
      boolean packed = packable(n, xd, out) && half % (pack(xd) / 2) == 0;
      String kernel =
          (packed ? "rms_norm_rope_packed_" : "rms_norm_rope_") + CudaBackend.code(xd.dtype());
      try (Launch launch = kernels.launch("norms.cu", kernel)) {
        launch.ptr(addr(xd)).ptr(addr(w)).ptr(addr(cf)).ptr(addr(sf)).ptr(addr(out));
        launch.i32(n).i32(l).i32(half).f32(eps);
        kernels.rows(launch, rows(x), n / (packed ? pack(xd) : 2));
      }
    }
    cb.releaseDerived(xd, x);
    return out;
  }

  Tensor softmax(Tensor x) {
    Tensor xf = cb.f32(x);
    Tensor out = cb.empty(DType.F32, x.shape());
    if (rows(x) > 0) {
      try (Launch l = kernels.launch("norms.cu", "softmax_f32")) {
        l.ptr(addr(xf)).ptr(addr(out)).i32(x.dim(-1));
        kernels.rows(l, rows(x), x.dim(-1));
      }
    }
    return out;
  }

  Tensor sumLastDim(Tensor x) {
    if (x.rank() == 0) {
      throw new IllegalArgumentException("sumLastDim of a scalar");
    }
    int[] shape = x.shape();
    shape[shape.length - 1] = 1;
    if (x.dim(-1) == 0) {
      return cb.zeros(DType.F32, shape);
    }
    Tensor xf = cb.f32(x);
    Tensor out = cb.empty(DType.F32, shape);
    if (out.numel() > 0) {
      try (Launch l = kernels.launch("norms.cu", "sum_last_f32")) {
        l.ptr(addr(xf)).ptr(addr(out)).i32(x.dim(-1));
        kernels.rows(l, out.numel(), x.dim(-1));
      }
    }
    return out;
  }

  Tensor l2Normalize(Tensor x, int dim, float eps) {
    int a = x.axis(dim);
    long outer = 1, inner = 1;
    for (int i = 0; i < a; i++) {
      outer *= x.dim(i);
    }
    for (int i = a + 1; i < x.rank(); i++) {
      inner *= x.dim(i);
    }
    Tensor xf = cb.f32(x);
    Tensor out = cb.empty(DType.F32, x.shape());
    if (out.numel() > 0) {
      try (Launch l = kernels.launch("norms.cu", "l2_normalize_f32")) {
        l.ptr(addr(xf)).ptr(addr(out)).i64(outer).i32(x.dim(a)).i64(inner).f32(eps);
        kernels.elementwise(l, outer * inner);
      }
    }
    return out;
  }

  // ---- elementwise ----------------------------------------------------------------------------

  Tensor map(Tensor x, int op, float a, float b) {
    Tensor xd = activation(x);
    Tensor out = cb.empty(xd.dtype(), x.shape());
    long n = out.numel();
    if (n > 0) {
      try (Launch l = kernels.launch("elementwise.cu", "unary_" + CudaBackend.code(xd.dtype()))) {
        l.ptr(addr(xd)).ptr(addr(out)).i64(n).i32(op).f32(a).f32(b);
        kernels.elementwise(l, n);
      }
    }
    cb.releaseDerived(xd, x);
    return out;
  }

  Tensor binary(Tensor a, Tensor b, Backend.BinaryOp op) {
    int[] shape = OpShapes.broadcast(a.shape(), b.shape());
    boolean bf16 = keepsBf16(a) && keepsBf16(b);
    Tensor av = (bf16 ? cb.onDevice(a) : cb.f32View(a)).expand(shape);
    Tensor bv = (bf16 ? cb.onDevice(b) : cb.f32View(b)).expand(shape);
    Tensor out = cb.empty(bf16 ? DType.BF16 : DType.F32, shape);
    long n = out.numel();
    if (n > 0) {
      String code = CudaBackend.code(out.dtype());
      if (av.isContiguous() && bv.isContiguous() && packable(n, av, bv, out)) {
        try (Launch l = kernels.launch("elementwise.cu", "binary_packed_" + code)) {
          l.ptr(addr(av)).ptr(addr(bv)).ptr(addr(out)).i64(n).i32(op.ordinal());
          kernels.elementwise(l, n / pack(out));
        }
      } else {
        try (Launch l = kernels.launch("elementwise.cu", "binary_" + code)) {
          l.ptr(addr(av)).ptr(addr(bv)).ptr(addr(out));
          l.struct(Index8.of(l.arena(), shape, av.strides(), bv.strides())).i64(n);
          l.i32(op.ordinal());
          kernels.elementwise(l, n);
        }
      }
    }
    cb.releaseDerived(av, a);
    cb.releaseDerived(bv, b);
    return out;
  }

  /** {@code x + y · gate} in one pass; the result has x's dtype in the BF16 mode. */
  Tensor gatedResidual(Tensor x, Tensor y, Tensor gate) {
    if (!Arrays.equals(x.shape(), y.shape())) {
      throw new IllegalArgumentException(
          "gatedResidual of x " + x + " and y " + y + " (one shape)");
    }
    boolean bf16 = keepsBf16(x) && keepsBf16(y);
    Tensor xd = bf16 ? bf16(x) : cb.f32(x);
    Tensor yd = bf16 ? bf16(y) : cb.f32(y);
    RowVectors g = rowVectors(x.shape(), gate);
    Tensor out = cb.empty(xd.dtype(), x.shape());
    long rows = rows(x);
    if (out.numel() > 0) {
      boolean packed = packable(x.dim(-1), xd, yd, out);
      String kernel =
          (packed ? "gated_residual_packed_" : "gated_residual_") + CudaBackend.code(out.dtype());
      try (Launch l = kernels.launch("elementwise.cu", kernel)) {
        l.ptr(addr(xd)).ptr(addr(yd)).ptr(addr(g.data().get(0))).ptr(addr(out));
        l.i64(rows).i32(x.dim(-1)).i64(g.groupStride()).i64(g.rowsPerGroup());
        kernels.elementwise(l, packed ? out.numel() / pack(out) : out.numel());
      }
    }
    cb.releaseDerived(xd, x);
    cb.releaseDerived(yd, y);
    g.release(cb, gate);
    if (keepsBf16(x) && out.dtype() != DType.BF16) {
      // A BF16 x with an F32 y: computed in F32, stored as x's dtype.
      Tensor converted = cb.convert(out, DType.BF16);
      cb.releaseDerived(out, converted);
      return converted;
    }
    return out;
  }

  Tensor rope(Tensor x, Tensor cos, Tensor sin) {
    if (x.rank() != 4 || x.dim(-1) % 2 != 0) {
      throw new IllegalArgumentException("rope wants [B, L, H, D] with even D, got " + x);
    }
    int l = x.dim(1), h = x.dim(2), half = x.dim(3) / 2;
    for (Tensor t : List.of(cos, sin)) {
      if (t.rank() != 2 || t.dim(0) != l || t.dim(1) != half) {
        throw new IllegalArgumentException(
            "rope table " + t + " must be [L, D/2] = [" + l + ", " + half + "] for " + x);
      }
    }
    Tensor xd = activation(x), cf = cb.f32(cos), sf = cb.f32(sin);
    Tensor out = cb.empty(xd.dtype(), x.shape());
    long pairs = out.numel() / 2;
    if (pairs > 0) {
      // A pack holds pack/2 pairs, which must not straddle a head.
      boolean packed = packable(2 * half, xd, out) && half % (pack(xd) / 2) == 0;
      String kernel = (packed ? "rope_packed_" : "rope_") + CudaBackend.code(xd.dtype());
      try (Launch launch = kernels.launch("misc.cu", kernel)) {
        launch.ptr(addr(xd)).ptr(addr(cf)).ptr(addr(sf)).ptr(addr(out));
        launch.i64(pairs).i32(l).i32(h).i32(half);
        kernels.elementwise(launch, packed ? pairs / (pack(xd) / 2) : pairs);
      }
    }
    cb.releaseDerived(xd, x);
    return out;
  }

  // ---- activation dtypes and per-row vectors ---------------------------------------------------

  /** Elements in a kernel's 16-byte pack of {@code t}'s dtype (common.cuh's PACK). */
  private static int pack(Tensor t) {
    return 16 / t.dtype().byteSize();
  }

  /**
   * Whether kernels may move rows of length {@code n} of these dense tensors in 16-byte packs:
   * {@code n} a multiple of the pack and every tensor 16-byte aligned (then so is every row).
   */
  private static boolean packable(long n, Tensor... tensors) {
    for (Tensor t : tensors) {
      if (n % pack(t) != 0 || addr(t) % 16 != 0) {
        return false;
      }
    }
    return true;
  }

  /** Whether {@code t} is an activation kept in BF16 (a BF16 tensor in the BF16 mode). */
  private boolean keepsBf16(Tensor t) {
    return cb.precision() == Precision.BF16 && t.dtype() == DType.BF16;
  }

  /** {@code t} as a contiguous kernel input: BF16 when it is kept so, else F32. */
  private Tensor activation(Tensor t) {
    return keepsBf16(t) ? bf16(t) : cb.f32(t);
  }

  /**
   * F32 vectors broadcast over the rows of an {@code [..., n]} tensor (modulation vectors {@code
   * [B, 1, n]} over {@code [B, L, n]}): row r reads {@code data + (r / rowsPerGroup) ·
   * groupStride}.
   */
  private record RowVectors(List<Tensor> data, long groupStride, long rowsPerGroup) {
    /** Releases the copies made of {@code originals} (nothing for views of them). */
    void release(CudaBackend cb, Tensor... originals) {
      for (int i = 0; i < originals.length; i++) {
        cb.releaseDerived(data.get(i), originals[i]);
      }
    }
  }

  /**
   * {@code vectors} as {@link RowVectors} over {@code shape}: views of them when they all follow
   * one (groupStride, rowsPerGroup) pattern, else dense F32 copies of their broadcasts.
   */
  private RowVectors rowVectors(int[] shape, Tensor... vectors) {
    List<Tensor> views = new ArrayList<>();
    long[] pattern = null;
    boolean shared = true;
    for (Tensor v : vectors) {
      Tensor e;
      try {
        e = cb.f32View(v).expand(shape);
      } catch (IllegalArgumentException ex) {
        throw new IllegalArgumentException(
            "vector " + v + " does not broadcast to " + Arrays.toString(shape));
      }
      views.add(e);
      long[] p = rowPattern(e);
      shared &= p != null && (pattern == null || Arrays.equals(p, pattern));
      pattern = pattern == null ? p : pattern;
    }
    if (shared) {
      return new RowVectors(views, pattern[0], pattern[1]);
    }
    List<Tensor> dense = new ArrayList<>();
    for (Tensor e : views) {
      dense.add(cb.convert(e, DType.F32));
    }
    return new RowVectors(dense, shape[shape.length - 1], 1);
  }

  /**
   * {groupStride, rowsPerGroup} of a view broadcast to its shape {@code [..., n]}: the row dims are
   * dense groups (outer) times broadcast rows (inner, stride 0); null for any other layout.
   */
  private static long[] rowPattern(Tensor e) {
    int last = e.rank() - 1;
    if (last < 0 || (e.dim(last) > 1 && e.stride(last) != 1)) {
      return null;
    }
    int k = last;
    long rowsPerGroup = 1;
    while (k > 0 && (e.stride(k - 1) == 0 || e.dim(k - 1) == 1)) {
      rowsPerGroup *= e.dim(k - 1);
      k--;
    }
    long groupStride = k == 0 ? 0 : e.stride(k - 1);
    long expected = k == 0 ? 0 : groupStride * e.dim(k - 1);
    for (int i = k - 2; i >= 0; i--) {
      if (e.dim(i) != 1 && e.stride(i) != expected) {
        return null;
      }
      expected *= e.dim(i);
    }
    return new long[] {groupStride, Math.max(rowsPerGroup, 1)};
  }

  // ---- shapes ---------------------------------------------------------------------------------

  Tensor concat(List<Tensor> parts, int dim) {
    int[] shape = OpShapes.concat(parts, dim);
    int a = parts.getFirst().axis(dim);
    Tensor out = cb.empty(DType.F32, shape);
    int at = 0;
    for (Tensor p : parts) {
      int len = p.dim(a);
      cb.copy(floatOnDevice(p), out.slice(a, at, at + len));
      at += len;
    }
    return out;
  }

  /** A floating device view (any strides, F32 or BF16) that the copy kernel can read. */
  private Tensor floatOnDevice(Tensor t) {
    Tensor here = cb.onDevice(t);
    return here.dtype().isFloating()
        ? here
        : cb.convert(cb.upload(cb.download(here), DType.F32), DType.F32);
  }

  Tensor pad(Tensor x, int[] pads, float value) {
    OpShapes.Padding padding = OpShapes.pad(x, pads);
    int rank = x.rank();
    int[] shape = padding.shape();
    int[] before = padding.before();
    Tensor out = cb.empty(DType.F32, shape);
    if (out.numel() == 0) {
      return out;
    }
    cb.fill(out, Float.floatToRawIntBits(value));
    Tensor src = floatOnDevice(x);
    Tensor dst = out;
    for (int d = 0; d < rank; d++) {
      // A negative pad crops: the overlap of input and output along d.
      int dstStart = Math.max(before[d], 0);
      int srcStart = Math.max(-before[d], 0);
      int len = Math.min(x.dim(d) - srcStart, shape[d] - dstStart);
      if (len <= 0) {
        return out;
      }
      src = src.slice(d, srcStart, srcStart + len);
      dst = dst.slice(d, dstStart, dstStart + len);
    }
    cb.copy(src, dst);
    return out;
  }

  Tensor upsampleNearest2d(Tensor x, int scaleH, int scaleW) {
    if (x.rank() < 2 || scaleH < 1 || scaleW < 1) {
      throw new IllegalArgumentException(
          "upsampleNearest2d of " + x + " by (" + scaleH + ", " + scaleW + ")");
    }
    int rank = x.rank();
    int h = x.dim(-2), w = x.dim(-1);
    int[] shape = x.shape();
    shape[rank - 2] = h * scaleH;
    shape[rank - 1] = w * scaleW;
    Tensor out = cb.empty(DType.F32, shape);
    if (out.numel() == 0) {
      return out;
    }
    // out[..., y, s, x, r] = in[..., y, x]: a stride-0 view of the input copied densely.
    int[] split = Arrays.copyOf(x.shape(), rank + 2);
    split[rank - 2] = h;
    split[rank - 1] = scaleH;
    split[rank] = w;
    split[rank + 1] = scaleW;
    Tensor src = floatOnDevice(x).unsqueeze(rank).unsqueeze(rank - 1).expand(split);
    cb.copy(src, out.reshape(split));
    return out;
  }

  Tensor embedding(Tensor table, Tensor ids) {
    if (table.rank() != 2) {
      throw new IllegalArgumentException("embedding table must be [V, D], got " + table);
    }
    if (ids.dtype().isFloating()) {
      throw new IllegalArgumentException("embedding ids must be integers, got " + ids);
    }
    int vocab = table.dim(0), d = table.dim(1);
    Tensor idsHere = cb.onDevice(ids);
    Tensor id64 =
        idsHere.dtype() == DType.I64 ? cb.contiguous(idsHere) : cb.convert(idsHere, DType.I64);
    for (long id : cb.downloadRaw(id64).toLongArray()) {
      if (id < 0 || id >= vocab) {
        throw new IllegalArgumentException(
            "embedding id " + id + " out of range for a table of " + vocab + " rows");
      }
    }
    int[] shape = Arrays.copyOf(ids.shape(), ids.rank() + 1);
    shape[ids.rank()] = d;
    Tensor tf = cb.f32(table);
    Tensor out = cb.empty(DType.F32, shape);
    long rows = id64.numel();
    if (out.numel() > 0) {
      try (Launch l = kernels.launch("misc.cu", "embedding_f32")) {
        l.ptr(addr(tf)).ptr(addr(id64)).ptr(addr(out)).i64(rows).i32(d);
        kernels.elementwise(l, rows * d);
      }
    }
    return out;
  }
}
