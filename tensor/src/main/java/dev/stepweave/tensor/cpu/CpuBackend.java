package dev.stepweave.tensor.cpu;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.DeviceRates;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The CPU implementation of {@link Backend}: F32 compute with the Vector API on a fixed pool of
 * worker threads. Results never depend on the thread count, and {@link #linear} is batch-invariant.
 */
public final class CpuBackend implements Backend {
  private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
  private final WorkPool pool;
  private final Elementwise elementwise;
  private final Norms norms;
  private final Attention attention;
  private final AttentionBackward attentionBackward;
  private final Conv3d conv;
  private final Shapes shapes;
  private final Rope rope;

  /** A backend using every available core. */
  public CpuBackend() {
    this(Runtime.getRuntime().availableProcessors());
  }

  /**
   * A backend using {@code threads} worker threads.
   *
   * @throws IllegalStateException naming the JVM flag when the Vector API is missing ({@link
   *     VectorApi})
   */
  public CpuBackend(int threads) {
    VectorApi.require();
    this.pool = new WorkPool(threads);
    this.elementwise = new Elementwise(pool);
    this.norms = new Norms(pool);
    this.attention = new Attention(pool);
    this.attentionBackward = new AttentionBackward(pool);
    this.conv = new Conv3d(pool);
    this.shapes = new Shapes(pool);
    this.rope = new Rope(pool);
  }

  /** The number of worker threads. */
  public int threads() {
    return pool.threads();
  }

  private DeviceRates rates;

  /**
   * This machine's rates, measured at the first call ({@link CpuRates}; a fraction of a second).
   */
  @Override
  public synchronized Optional<DeviceRates> deviceRates() {
    if (rates == null) {
      rates = CpuRates.measure(this);
    }
    return Optional.of(rates);
  }

  @Override
  public Device device() {
    return Device.CPU;
  }

  @Override
  public Tensor zeros(DType dtype, int... shape) {
    return Tensor.zeros(dtype, shape);
  }

  /** A fresh contiguous host copy of {@code t} in {@code dtype}. */
  @Override
  public Tensor upload(Tensor t, DType dtype) {
    return StridedCopy.toContiguous(t, dtype);
  }

  @Override
  public Tensor download(Tensor t) {
    return StridedCopy.toContiguous(t, DType.F32);
  }

  @Override
  public Tensor contiguous(Tensor t) {
    Dense.requireHost(t);
    return t.isContiguous() ? t : StridedCopy.toContiguous(t, t.dtype());
  }

  @Override
  public Tensor linear(Tensor x, Tensor w, Tensor bias) {
    OpShapes.linear(x, w, bias);
    int k = w.dim(1), n = w.dim(0);
    Tensor xf = Dense.f32(x);
    Tensor wf = Dense.f32(w);
    int m = 1;
    for (int i = 0; i < x.rank() - 1; i++) {
      m = Math.multiplyExact(m, x.dim(i));
    }
    int[] shape = x.shape();
    shape[shape.length - 1] = n;
    Tensor out = Dense.output(shape);
    Gemm.multiply(
        pool,
        m,
        n,
        k,
        Matrix.rowMajor(xf.segment(), 0, k),
        new Matrix(wf.segment(), 0, 1, k),
        bias == null ? null : Matrix.columnVector(Dense.segment(bias)),
        Matrix.rowMajor(out.segment(), 0, n));
    return out;
  }

  @Override
  public Tensor matmul(Tensor a, Tensor b) {
    int[] batch = OpShapes.matmulBatch(a, b);
    int m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
    int[] aShape = OpShapes.withMatrix(batch, m, k);
    int[] bShape = OpShapes.withMatrix(batch, k, n);
    // Read through the views' strides: a transposed operand (the backward's gᵀ·x) is not copied.
    Tensor av = Dense.f32Strided(a).expand(aShape);
    Tensor bv = Dense.f32Strided(b).expand(bShape);
    int[] outShape = Arrays.copyOf(batch, batch.length + 2);
    outShape[batch.length] = m;
    outShape[batch.length + 1] = n;
    Tensor out = Dense.output(outShape);
    long count = Tensor.numel(batch);
    for (long i = 0; i < count; i++) {
      Gemm.multiply(
          pool,
          m,
          n,
          k,
          new Matrix(
              av.storage().segment(), batchOffset(av, batch, i), av.stride(-2), av.stride(-1)),
          new Matrix(
              bv.storage().segment(), batchOffset(bv, batch, i), bv.stride(-2), bv.stride(-1)),
          null,
          Matrix.rowMajor(out.segment(), i * m * n, n));
    }
    return out;
  }

  private static long batchOffset(Tensor t, int[] batch, long index) {
    long off = t.offset();
    for (int d = batch.length - 1; d >= 0; d--) {
      off += (index % batch[d]) * t.stride(d);
      index /= batch[d];
    }
    return off;
  }

  @Override
  public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor bias, float scale) {
    return attention.attention(q, k, v, bias, scale);
  }

  @Override
  public AttentionGradients attentionBackward(
      AttentionForward forward, Tensor gradOut, boolean biasGradient) {
    return attentionBackward.backward(forward, gradOut, biasGradient);
  }

  @Override
  public Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    return conv.conv3d(x, w, bias, stride, padding);
  }

  @Override
  public Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
    return norms.layerNorm(x, weight, bias, eps);
  }

  @Override
  public Tensor rmsNorm(Tensor x, Tensor weight, float eps) {
    return norms.rmsNorm(x, weight, eps);
  }

  @Override
  public Tensor l2Normalize(Tensor x, int dim, float eps) {
    return norms.l2Normalize(x, dim, eps);
  }

  @Override
  public Tensor softmax(Tensor x) {
    return norms.softmax(x);
  }

  @Override
  public Tensor gelu(Tensor x, boolean tanhApproximation) {
    return elementwise.map(x, tanhApproximation ? ScalarMath::geluTanh : ScalarMath::geluErf);
  }

  @Override
  public Tensor silu(Tensor x) {
    return elementwise.map(x, ScalarMath::silu);
  }

  @Override
  public Tensor unary(Tensor x, UnaryOp op) {
    return elementwise.unary(x, op);
  }

  @Override
  public Tensor binary(Tensor a, Tensor b, BinaryOp op) {
    return elementwise.binary(a, b, op);
  }

  @Override
  public Tensor affine(Tensor x, float scale, float shift) {
    return elementwise.map(x, v -> v * scale + shift);
  }

  @Override
  public Tensor clamp(Tensor x, float min, float max) {
    return elementwise.map(x, v -> Math.min(Math.max(v, min), max));
  }

  @Override
  public Tensor rope(Tensor x, Tensor cos, Tensor sin) {
    return rope.rope(x, cos, sin);
  }

  @Override
  public Tensor concat(List<Tensor> parts, int dim) {
    return shapes.concat(parts, dim);
  }

  @Override
  public Tensor pad(Tensor x, int[] pads, float value) {
    return shapes.pad(x, pads, value);
  }

  @Override
  public Tensor upsampleNearest2d(Tensor x, int scaleH, int scaleW) {
    return shapes.upsampleNearest2d(x, scaleH, scaleW);
  }

  @Override
  public Tensor embedding(Tensor table, Tensor ids) {
    return shapes.embedding(table, ids);
  }

  @Override
  public Tensor sumLastDim(Tensor x) {
    return shapes.sumLastDim(x);
  }

  @Override
  public void addInto(Tensor target, Tensor value) {
    Backend.requireInPlaceTarget(target, value);
    shapes.writeInto(target, value, true);
  }

  @Override
  public void copyInto(Tensor target, Tensor value) {
    Backend.requireInPlaceTarget(target, value);
    shapes.writeInto(target, value, false);
  }

  /** The elements in order, one thread: the same bits as any split, and as the CUDA kernel's. */
  @Override
  public void adamw(Tensor parameter, Tensor gradient, Tensor m, Tensor v, AdamWStep step) {
    Backend.requireAdamWOperands(parameter, gradient, m, v);
    MemorySegment p = parameter.segment(), g = gradient.segment();
    MemorySegment ms = m.segment(), vs = v.segment();
    for (long i = 0; i < parameter.numel(); i++) {
      float gi = g.getAtIndex(F32, i);
      float value = p.getAtIndex(F32, i) * step.shrink();
      float mi = ms.getAtIndex(F32, i);
      mi = mi + step.beta1Complement() * (gi - mi);
      float vi = vs.getAtIndex(F32, i) * step.beta2() + step.beta2Complement() * gi * gi;
      float denom = (float) Math.sqrt(vi) / step.bias2Sqrt() + step.eps();
      p.setAtIndex(F32, i, value - step.stepSize() * (mi / denom));
      ms.setAtIndex(F32, i, mi);
      vs.setAtIndex(F32, i, vi);
    }
  }
}
