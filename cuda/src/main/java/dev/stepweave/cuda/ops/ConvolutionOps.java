package dev.stepweave.cuda.ops;

import static dev.stepweave.cuda.ops.Operands.addr;

import dev.stepweave.cuda.blas.Gemm;
import dev.stepweave.cuda.cudnn.CudnnConvolution;
import dev.stepweave.cuda.cudnn.CudnnRuntime;
import dev.stepweave.cuda.kernels.Kernels;
import dev.stepweave.cuda.kernels.Launch;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/** {@code conv3d}: cuDNN's convolution (BF16 mode) where it takes the shape, else im2col + GEMM. */
public final class ConvolutionOps {
  private final Operands operands;
  private final DeviceTensors tensors;
  private final Kernels kernels;
  private final Gemm gemm;
  private final CudnnConvolution cudnnConv;

  ConvolutionOps(Operands operands, Gemm gemm, CudnnRuntime cudnnRuntime) {
    this.operands = operands;
    this.tensors = operands.tensors();
    this.kernels = tensors.kernels();
    this.gemm = gemm;
    this.cudnnConv = new CudnnConvolution(tensors, cudnnRuntime);
  }

  void close() {
    cudnnConv.close();
  }

  /** {@code storage} was written in place: cached copies of weights in it are stale. */
  public void overwritten(Storage storage) {
    cudnnConv.overwritten(storage);
  }

  /** The convolution with its result in x's type in the BF16 mode (BF16 or F32), else F32. */
  public Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    return conv3d(x, w, bias, stride, padding, operands.bf16Mode() ? cudnnType(x) : DType.F32);
  }

  /**
   * The convolution with its result in {@code out}. In the BF16 mode cuDNN runs it on x's type when
   * present and it takes the shape: a BF16 x straight into an F32 result where cuDNN offers an
   * engine for that, else into BF16, converted; otherwise im2col in F32.
   */
  public Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding, DType out) {
    OpShapes.conv3d(x, w, bias, stride, padding);
    if (operands.bf16Mode()) {
      Tensor fast = cudnnPerItem(x, w, bias, stride, padding, out);
      if (fast != null) {
        return fast;
      }
    }
    return converted(im2colF32(x, w, bias, stride, padding), out);
  }

  /**
   * cuDNN's convolution of each item of x's batch on its own, into one result, or null where cuDNN
   * does not take the shape. cuDNN chooses its engine per batch size, and another engine sums in
   * another order: one item at a time, an item's result is the same bits however many requests
   * share the transformer call (the patch embedding of a batched step; the VAE runs one item).
   */
  private Tensor cudnnPerItem(
      Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding, DType out) {
    int batch = x.dim(0);
    if (batch == 1) {
      return cudnn(x, w, bias, stride, padding, out);
    }
    Tensor y = null;
    for (int i = 0; i < batch; i++) {
      Tensor item = cudnn(x.slice(0, i, i + 1), w, bias, stride, padding, out);
      if (item == null) {
        if (y != null) {
          tensors.release(y);
        }
        return null;
      }
      if (y == null) {
        int[] shape = item.shape();
        shape[0] = batch;
        y = tensors.empty(item.dtype(), shape);
      }
      tensors.copy(item, y.slice(0, i, i + 1));
      tensors.release(item); // the copy is issued: stream order makes the reuse safe
    }
    return y;
  }

  /** cuDNN in the requested type, else in x's own type converted; null where it refuses both. */
  private Tensor cudnn(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding, DType out) {
    Tensor fast = cudnnConv.conv3d(x, w, bias, stride, padding, out);
    DType own = cudnnType(x);
    if (fast == null && out != own) {
      fast = converted(cudnnConv.conv3d(x, w, bias, stride, padding, own), out);
    }
    return fast;
  }

  /** The type cuDNN convolves x in: BF16 for a BF16 x, else F32 (TF32 products). */
  private static DType cudnnType(Tensor x) {
    return x.dtype() == DType.BF16 ? DType.BF16 : DType.F32;
  }

  private Tensor converted(Tensor y, DType out) {
    if (y == null || y.dtype() == out) {
      return y;
    }
    Tensor c = tensors.convert(y, out);
    tensors.release(y); // the conversion is issued: stream order makes the reuse safe
    return c;
  }

  private Tensor im2colF32(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    int[] outShape = OpShapes.conv3d(x, w, bias, stride, padding);
    int batch = x.dim(0), c = x.dim(1), t = x.dim(2), hh = x.dim(3), ww = x.dim(4);
    int o = w.dim(0), kt = w.dim(2), kh = w.dim(3), kw = w.dim(4);
    int to = outShape[2], ho = outShape[3], wo = outShape[4];
    Tensor out = tensors.empty(DType.F32, batch, o, to, ho, wo);
    Tensor xf = tensors.f32(x);
    Tensor wf = tensors.f32(w);
    long plane = (long) ho * wo;
    int kk = c * kt * kh * kw;
    boolean pointwise =
        kt * kh * kw == 1
            && Arrays.equals(stride, new int[] {1, 1, 1})
            && Arrays.equals(padding, new int[3]);
    int nt =
        (int) Math.max(1, Math.min(to, CudaOps.SCRATCH_BUDGET_BYTES / Math.max(1, kk * plane * 4)));
    Tensor col = pointwise ? null : tensors.empty(DType.F32, kk, Math.toIntExact(nt * plane));
    MemorySegment geometry = null;
    for (int b = 0; b < batch; b++) {
      long xb = addr(xf) + (long) b * c * t * hh * ww * 4;
      long ob = addr(out) + (long) b * o * to * plane * 4;
      if (pointwise) {
        int n = Math.toIntExact(to * plane);
        gemm.run(
            new Gemm.Shape(
                o,
                n,
                kk,
                false,
                kk,
                false,
                n,
                n,
                1,
                0,
                0,
                0,
                0L,
                false,
                false,
                Gemm.Epilogue.NONE,
                o),
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
                0L,
                false,
                false,
                Gemm.Epilogue.NONE,
                o),
            addr(wf),
            addr(col),
            ob + t0 * plane * 4,
            0L);
      }
    }
    tensors.releaseDerived(col, xf);
    tensors.releaseDerived(xf, x);
    tensors.releaseDerived(wf, w);
    if (bias != null) {
      Tensor bf = tensors.f32(bias);
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
  public String conv3dPath(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    return operands.bf16Mode()
        ? cudnnConv.describe(x, w, bias, stride, padding, cudnnType(x))
        : "im2col + cuBLASLt F32 GEMM (F32 precision)";
  }

  /** Every convolution shape the BF16 mode has seen and what ran it, one per line. */
  public String conv3dPaths() {
    return operands.bf16Mode() ? cudnnConv.paths() : "im2col + cuBLASLt F32 GEMM (F32 precision)";
  }
}
