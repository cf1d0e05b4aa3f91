package dev.stepweave.cuda.ops;

import static dev.stepweave.cuda.ops.Operands.addr;
import static dev.stepweave.cuda.ops.Operands.pack;
import static dev.stepweave.cuda.ops.Operands.packable;
import static dev.stepweave.cuda.ops.Operands.rows;

import dev.stepweave.cuda.kernels.Kernels;
import dev.stepweave.cuda.kernels.Launch;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.ResidualNorm;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The row reductions of norms.cu: layer and RMS norms (plain, modulated, with RoPE), softmax, sums.
 */
public final class NormOps {
  private final Operands operands;
  private final DeviceTensors tensors;
  private final Kernels kernels;

  NormOps(Operands operands) {
    this.operands = operands;
    this.tensors = operands.tensors();
    this.kernels = tensors.kernels();
  }

  private Tensor optionalRowParam(Tensor p, int n, String what) {
    OpShapes.rowParameter(p, n, what);
    return p == null ? null : tensors.f32(p);
  }

  private static long rows(Tensor x) {
    int n = x.rank() == 0 ? 1 : x.dim(-1);
    return n == 0 ? 0 : x.numel() / n;
  }

  public Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
    int n = x.dim(-1);
    Tensor w = optionalRowParam(weight, n, "layerNorm weight");
    Tensor b = optionalRowParam(bias, n, "layerNorm bias");
    return layerNorm(x, w, b, null, null, eps);
  }

  /** {@code layerNorm(x) · (1 + scale) + shift} in one pass (norms.cu's RowModulation). */
  public Tensor modulatedLayerNorm(Tensor x, Tensor shift, Tensor scale, float eps) {
    return layerNorm(x, null, null, shift, scale, eps);
  }

  private Tensor layerNorm(Tensor x, Tensor w, Tensor b, Tensor shift, Tensor scale, float eps) {
    int n = x.dim(-1);
    Tensor xd = operands.activation(x);
    Tensor out = tensors.empty(xd.dtype(), x.shape());
    RowVectors mod = shift == null ? null : operands.rowVectors(x.shape(), shift, scale);
    if (rows(x) > 0) {
      boolean packed = packable(n, xd, out);
      String kernel =
          (packed ? "layer_norm_packed_" : "layer_norm_") + DeviceTensors.code(xd.dtype());
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
    tensors.releaseDerived(xd, x);
    if (mod != null) {
      mod.release(tensors, shift, scale);
    }
    return out;
  }

  /**
   * Whether {@link #residualLayerNorm} runs as one kernel for these operands: x and y of one shape
   * and one kernel dtype (BF16 both in the BF16 mode, else F32).
   */
  public boolean fusesResidual(Tensor x, Tensor y) {
    return Arrays.equals(x.shape(), y.shape()) && operands.keepsBf16(x) == operands.keepsBf16(y);
  }

  /**
   * {@code r = x + y · gate} (x + y for a null gate), then the layer norm of r with the affine
   * {@code weight}/{@code bias} or the modulation {@code shift}/{@code scale} (either pair may be
   * null), in one pass (norms.cu's residual_layer_norm): the values of gatedResidual (or add) then
   * layerNorm / modulatedLayerNorm, bit for bit. Needs {@link #fusesResidual}.
   */
  public ResidualNorm residualLayerNorm(
      Tensor x,
      Tensor y,
      Tensor gate,
      Tensor weight,
      Tensor bias,
      Tensor shift,
      Tensor scale,
      float eps) {
    if (!fusesResidual(x, y)) {
      throw new IllegalArgumentException("residual layer norm of x " + x + " and y " + y);
    }
    int n = x.dim(-1);
    Tensor w = optionalRowParam(weight, n, "layerNorm weight");
    Tensor b = optionalRowParam(bias, n, "layerNorm bias");
    Tensor xd = operands.activation(x), yd = operands.activation(y);
    Tensor r = tensors.empty(xd.dtype(), x.shape());
    Tensor out = tensors.empty(xd.dtype(), x.shape());
    // One row pattern for the gate and the modulation (a block's vectors are views of one tensor).
    List<Tensor> vectors = new ArrayList<>();
    if (shift != null) {
      vectors.add(shift);
      vectors.add(scale);
    }
    if (gate != null) {
      vectors.add(gate);
    }
    RowVectors rv =
        vectors.isEmpty() ? null : operands.rowVectors(x.shape(), vectors.toArray(Tensor[]::new));
    if (rows(x) > 0) {
      boolean packed = packable(n, xd, yd, r, out);
      String kernel =
          (packed ? "residual_layer_norm_packed_" : "residual_layer_norm_")
              + DeviceTensors.code(xd.dtype());
      try (Launch l = kernels.launch("norms.cu", kernel)) {
        MemorySegment m = l.arena().allocate(32, 8);
        if (shift != null) {
          m.set(ValueLayout.JAVA_LONG, 0, addr(rv.data().get(0)));
          m.set(ValueLayout.JAVA_LONG, 8, addr(rv.data().get(1)));
        }
        m.set(ValueLayout.JAVA_LONG, 16, rv == null ? 0L : rv.groupStride());
        m.set(ValueLayout.JAVA_LONG, 24, rv == null ? 1L : rv.rowsPerGroup());
        long g = gate == null ? 0L : addr(rv.data().get(vectors.size() - 1));
        l.ptr(addr(xd)).ptr(addr(yd)).ptr(g).ptr(addr(w)).ptr(addr(b)).struct(m);
        l.ptr(addr(r)).ptr(addr(out)).i32(n).f32(eps);
        kernels.rows(l, rows(x), packed ? n / pack(xd) : n);
      }
    }
    tensors.releaseDerived(xd, x);
    tensors.releaseDerived(yd, y);
    if (rv != null) {
      rv.release(tensors, vectors.toArray(Tensor[]::new));
    }
    return new ResidualNorm(r, out);
  }

  public Tensor rmsNorm(Tensor x, Tensor weight, float eps) {
    int n = x.dim(-1);
    Tensor w = optionalRowParam(weight, n, "rmsNorm weight");
    Tensor xd = operands.activation(x);
    Tensor out = tensors.empty(xd.dtype(), x.shape());
    if (rows(x) > 0) {
      boolean packed = packable(n, xd, out);
      String kernel = (packed ? "rms_norm_packed_" : "rms_norm_") + DeviceTensors.code(xd.dtype());
      try (Launch l = kernels.launch("norms.cu", kernel)) {
        l.ptr(addr(xd)).ptr(addr(w)).ptr(addr(out)).i32(n).f32(eps);
        kernels.rows(l, rows(x), packed ? n / pack(xd) : n);
      }
    }
    tensors.releaseDerived(xd, x);
    return out;
  }

  /**
   * The row pass of a norm's backward (norms.cu's {@code layer_norm_backward} or {@code
   * rms_norm_backward}, by {@code rms}): from the output's gradient {@code g}, {@code dx} where
   * {@code wantInput} and {@code g·x̂} (the weight's gradient before its sum over the rows) where
   * {@code wantScaled}, both F32 of x's shape; either entry null when not wanted.
   */
  public Tensor[] normBackward(
      boolean rms,
      Tensor g,
      Tensor x,
      Tensor weight,
      float eps,
      boolean wantInput,
      boolean wantScaled) {
    int n = x.dim(-1);
    if (!java.util.Arrays.equals(g.shape(), x.shape())) {
      throw new IllegalArgumentException("a norm's gradient " + g + " for its input " + x);
    }
    Tensor w = optionalRowParam(weight, n, "norm weight");
    Tensor xd = operands.activation(x), gd = tensors.f32(g);
    Tensor dx = wantInput ? tensors.empty(DType.F32, x.shape()) : null;
    Tensor gx = wantScaled ? tensors.empty(DType.F32, x.shape()) : null;
    if (rows(x) > 0 && (wantInput || wantScaled)) {
      String kernel =
          (rms ? "rms_norm_backward_" : "layer_norm_backward_") + DeviceTensors.code(xd.dtype());
      try (Launch l = kernels.launch("norms.cu", kernel)) {
        l.ptr(addr(xd)).ptr(addr(gd)).ptr(addr(w)).ptr(addr(dx)).ptr(addr(gx)).i32(n).f32(eps);
        kernels.rows(l, rows(x), n);
      }
    }
    tensors.releaseDerived(xd, x);
    tensors.releaseDerived(gd, g);
    if (weight != null) {
      tensors.releaseDerived(w, weight);
    }
    return new Tensor[] {dx, gx};
  }

  /** rmsNorm over {@code [B, L, H·D]} rows, then RoPE per head, in one pass (norms.cu). */
  public Tensor rmsNormRope(Tensor x, Tensor weight, float eps, int heads, Tensor cos, Tensor sin) {
    OpShapes.rmsNormRope(x, heads, cos, sin);
    int n = x.dim(-1);
    int l = x.dim(1), half = n / heads / 2;
    Tensor w = optionalRowParam(weight, n, "rmsNorm weight");
    Tensor xd = operands.activation(x), cf = tensors.f32(cos), sf = tensors.f32(sin);
    Tensor out = tensors.empty(xd.dtype(), x.dim(0), l, heads, n / heads);
    if (rows(x) > 0) {
      // Packs hold whole pairs of one head when D/2 is a multiple of pack/2; else pairs.
      boolean packed = packable(n, xd, out) && half % (pack(xd) / 2) == 0;
      String kernel =
          (packed ? "rms_norm_rope_packed_" : "rms_norm_rope_") + DeviceTensors.code(xd.dtype());
      try (Launch launch = kernels.launch("norms.cu", kernel)) {
        launch.ptr(addr(xd)).ptr(addr(w)).ptr(addr(cf)).ptr(addr(sf)).ptr(addr(out));
        launch.i32(n).i32(l).i32(half).f32(eps);
        kernels.rows(launch, rows(x), n / (packed ? pack(xd) : 2));
      }
    }
    tensors.releaseDerived(xd, x);
    return out;
  }

  public Tensor softmax(Tensor x) {
    Tensor xf = tensors.f32(x);
    Tensor out = tensors.empty(DType.F32, x.shape());
    if (rows(x) > 0) {
      try (Launch l = kernels.launch("norms.cu", "softmax_f32")) {
        l.ptr(addr(xf)).ptr(addr(out)).i32(x.dim(-1));
        kernels.rows(l, rows(x), x.dim(-1));
      }
    }
    return out;
  }

  /**
   * Whether device tensor {@code t} has no NaN or ±Inf: one grid-stride scan writes a flag and only
   * that flag (4 bytes) comes back, not the tensor (the engine checks every step's output of every
   * request this way).
   */
  public boolean isFinite(Tensor t) {
    if (!t.dtype().isFloating() || t.numel() == 0) {
      return true;
    }
    Tensor x =
        t.dtype() == DType.F32 || t.dtype() == DType.BF16 ? t : tensors.convert(t, DType.F32);
    Tensor dense = tensors.contiguous(x);
    Tensor flag = tensors.zeros(DType.F32, 1);
    try (Launch l =
        kernels.launch("misc.cu", "any_nonfinite_" + DeviceTensors.code(dense.dtype()))) {
      l.ptr(addr(dense)).i64(dense.numel()).ptr(addr(flag));
      kernels.elementwise(l, dense.numel());
    }
    boolean finite = tensors.downloadRaw(flag).getFloat(0) == 0f;
    tensors.releaseDerived(flag, t);
    tensors.releaseDerived(dense, x);
    tensors.releaseDerived(x, t);
    return finite;
  }

  public Tensor sumLastDim(Tensor x) {
    int[] shape = OpShapes.sumLastDim(x);
    if (x.dim(-1) == 0) {
      return tensors.zeros(DType.F32, shape);
    }
    Tensor xf = tensors.f32(x);
    Tensor out = tensors.empty(DType.F32, shape);
    if (out.numel() > 0) {
      try (Launch l = kernels.launch("norms.cu", "sum_last_f32")) {
        l.ptr(addr(xf)).ptr(addr(out)).i32(x.dim(-1));
        kernels.rows(l, out.numel(), x.dim(-1));
      }
    }
    return out;
  }

  public Tensor l2Normalize(Tensor x, int dim, float eps) {
    Tensor xd = operands.activation(x);
    Tensor out = tensors.empty(xd.dtype(), x.shape());
    channelNormInto(out, xd, x.axis(dim), null, eps, false);
    tensors.releaseDerived(xd, x);
    return out;
  }

  /**
   * {@code l2Normalize(x, 1, eps) · gamma}, SiLU when {@code silu}, in one pass, written in {@code
   * out}: the Wan VAE's channel norm ({@code gamma [C, 1, …, 1]}), an F32 or BF16 x into an F32 or
   * BF16 result.
   */
  public Tensor channelNorm(Tensor x, Tensor gamma, float eps, boolean silu, DType out) {
    requireChannelGamma(x, gamma);
    Tensor xd = normInput(x);
    Tensor y = tensors.empty(out, x.shape());
    channelNormInto(y, xd, 1, gamma, eps, silu);
    tensors.releaseDerived(xd, x);
    return y;
  }

  /**
   * {@link #channelNorm} of {@code x [B, C, T, …]} written after {@code past [B, C, P, …]} along
   * time, in one tensor: the input of a causal convolution without a separate concatenation.
   */
  public Tensor channelNormAfter(
      Tensor past, Tensor x, Tensor gamma, float eps, boolean silu, DType out) {
    requireChannelGamma(x, gamma);
    int[] shape = OpShapes.concat(List.of(past, x), 2);
    Tensor y = tensors.empty(out, shape);
    int p = past.dim(2);
    tensors.copy(tensors.onDevice(past), y.slice(2, 0, p));
    Tensor xd = normInput(x);
    channelNormInto(y.slice(2, p, shape[2]), xd, 1, gamma, eps, silu);
    tensors.releaseDerived(xd, x);
    return y;
  }

  /** x on the device as the kernel reads it: F32 or BF16 as it is, anything else as F32. */
  private Tensor normInput(Tensor x) {
    Tensor here = tensors.onDevice(x);
    if (here.dtype() == DType.F32 || here.dtype() == DType.BF16) {
      return here;
    }
    Tensor f = tensors.f32(here);
    tensors.releaseDerived(here, x);
    return f;
  }

  private static void requireChannelGamma(Tensor x, Tensor gamma) {
    if (gamma.numel() != x.dim(1)) {
      throw new IllegalArgumentException(
          "channel norm of " + x + " with gamma " + gamma + ": one gamma per channel expected");
    }
  }

  /**
   * Writes the norm of x along axis {@code a} into {@code out}: x's shape, dense from axis {@code
   * a} on, or such a view of a larger dense tensor along axis a+1 (each outer index and channel a
   * whole run of elements).
   */
  private void channelNormInto(Tensor out, Tensor x, int a, Tensor gamma, float eps, boolean silu) {
    long outer = 1, inner = 1;
    for (int i = 0; i < a; i++) {
      outer *= x.dim(i);
    }
    for (int i = a + 1; i < x.rank(); i++) {
      inner *= x.dim(i);
    }
    Tensor g = gamma == null ? null : tensors.f32(gamma);
    if (out.numel() > 0) {
      long yOuter = a == 0 ? 0 : out.stride(a - 1);
      long yChannel = out.stride(a);
      String in = DeviceTensors.code(x.dtype());
      String to = DeviceTensors.code(out.dtype());
      String kernel = "channel_norm_" + (in.equals(to) ? in : in + "_" + to);
      try (Launch l = kernels.launch("norms.cu", kernel)) {
        l.ptr(addr(x)).ptr(g == null ? 0L : addr(g)).ptr(addr(out));
        l.i64(outer).i32(x.dim(a)).i64(inner).i64(yOuter).i64(yChannel);
        l.f32(eps).i32(silu ? 1 : 0);
        kernels.elementwise(l, outer * inner);
      }
    }
    if (g != null) {
      tensors.releaseDerived(g, gamma);
    }
  }
}
