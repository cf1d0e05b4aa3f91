package dev.stepweave.cuda.ops;

import static dev.stepweave.cuda.ops.Operands.addr;
import static dev.stepweave.cuda.ops.Operands.pack;
import static dev.stepweave.cuda.ops.Operands.packable;
import static dev.stepweave.cuda.ops.Operands.rows;

import dev.stepweave.cuda.kernels.Expansion;
import dev.stepweave.cuda.kernels.Index8;
import dev.stepweave.cuda.kernels.Kernels;
import dev.stepweave.cuda.kernels.Launch;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/** Elementwise maps, broadcast binary ops and the fused gated residual and RoPE. */
public final class ElementwiseOps {
  // Extra map codes of elementwise.cu, after Backend.UnaryOp's ordinals.
  private static final int GELU_ERF = 20;
  private static final int GELU_TANH = 21;
  private static final int SILU = 22;
  private static final int AFFINE = 23;
  private static final int CLAMP = 24;

  private final Operands operands;
  private final DeviceTensors tensors;
  private final Kernels kernels;

  ElementwiseOps(Operands operands) {
    this.operands = operands;
    this.tensors = operands.tensors();
    this.kernels = tensors.kernels();
  }

  public Tensor unary(Tensor x, Backend.UnaryOp op) {
    return map(x, op.ordinal(), 0, 0);
  }

  public Tensor gelu(Tensor x, boolean tanhApproximation) {
    return map(x, tanhApproximation ? GELU_TANH : GELU_ERF, 0, 0);
  }

  public Tensor silu(Tensor x) {
    return map(x, SILU, 0, 0);
  }

  public Tensor affine(Tensor x, float scale, float shift) {
    return map(x, AFFINE, scale, shift);
  }

  public Tensor clamp(Tensor x, float min, float max) {
    return map(x, CLAMP, min, max);
  }

  Tensor add(Tensor a, Tensor b) {
    return binary(a, b, Backend.BinaryOp.ADD);
  }

  private Tensor map(Tensor x, int op, float a, float b) {
    Tensor xd = operands.activation(x);
    Tensor out = tensors.empty(xd.dtype(), x.shape());
    long n = out.numel();
    if (n > 0) {
      try (Launch l = kernels.launch("elementwise.cu", "unary_" + DeviceTensors.code(xd.dtype()))) {
        l.ptr(addr(xd)).ptr(addr(out)).i64(n).i32(op).f32(a).f32(b);
        kernels.elementwise(l, n);
      }
    }
    tensors.releaseDerived(xd, x);
    return out;
  }

  /** {@link Backend#geluTanhBackward} in one pass (F32 math, F32 out). */
  public Tensor geluTanhBackward(Tensor g, Tensor x) {
    if (!Arrays.equals(g.shape(), x.shape())) {
      throw new IllegalArgumentException("GELU's gradient " + g + " for its input " + x);
    }
    Tensor gd = tensors.f32(g), xd = operands.activation(x);
    Tensor dx = tensors.empty(DType.F32, x.shape());
    long n = dx.numel();
    if (n > 0) {
      try (Launch l =
          kernels.launch(
              "elementwise.cu", "gelu_tanh_backward_" + DeviceTensors.code(xd.dtype()))) {
        l.ptr(addr(gd)).ptr(addr(xd)).ptr(addr(dx)).i64(n);
        l.f32((float) Math.sqrt(2 / Math.PI)).f32(0.044715f);
        kernels.elementwise(l, n);
      }
    }
    tensors.releaseDerived(gd, g);
    tensors.releaseDerived(xd, x);
    return dx;
  }

  /**
   * {@code target += value} in one packed pass, written over target (each element is read before it
   * is written, by the same thread): where both are dense F32 of one shape on this device. False,
   * launching and uploading nothing, otherwise (the caller's general path uploads once).
   */
  public boolean addInPlace(Tensor target, Tensor value) {
    long n = target.numel();
    if (!tensors.isHere(value)) {
      return false;
    }
    if (target.dtype() != DType.F32
        || value.dtype() != DType.F32
        || !target.isContiguous()
        || !value.isContiguous()
        || !Arrays.equals(target.shape(), value.shape())
        || n == 0
        || !packable(n, target, value, target)) {
      return false;
    }
    try (Launch l = kernels.launch("elementwise.cu", "binary_packed_f32")) {
      l.ptr(addr(target)).ptr(addr(value)).ptr(addr(target)).i64(n);
      l.i32(Backend.BinaryOp.ADD.ordinal());
      kernels.elementwise(l, n / pack(target));
    }
    return true;
  }

  public Tensor binary(Tensor a, Tensor b, Backend.BinaryOp op) {
    int[] shape = OpShapes.broadcast(a.shape(), b.shape());
    Tensor mixed = mixed(a, b, shape, op);
    if (mixed != null) {
      return mixed;
    }
    boolean bf16 = operands.keepsBf16(a) && operands.keepsBf16(b);
    Tensor av = (bf16 ? tensors.onDevice(a) : tensors.f32View(a)).expand(shape);
    Tensor bv = (bf16 ? tensors.onDevice(b) : tensors.f32View(b)).expand(shape);
    Tensor out = tensors.empty(bf16 ? DType.BF16 : DType.F32, shape);
    long n = out.numel();
    if (n > 0) {
      String code = DeviceTensors.code(out.dtype());
      long periodA = period(av), periodB = period(bv);
      if (av.isContiguous() && bv.isContiguous() && packable(n, av, bv, out)) {
        try (Launch l = kernels.launch("elementwise.cu", "binary_packed_" + code)) {
          l.ptr(addr(av)).ptr(addr(bv)).ptr(addr(out)).i64(n).i32(op.ordinal());
          kernels.elementwise(l, n / pack(out));
        }
      } else if ((av.isContiguous() && periodB > 0 || bv.isContiguous() && periodA > 0)
          && packable(av.isContiguous() ? periodB : periodA, out)
          && packable(n, av, bv, out)) {
        boolean periodicB = av.isContiguous();
        try (Launch l = kernels.launch("elementwise.cu", "binary_periodic_" + code)) {
          l.ptr(addr(av)).ptr(addr(bv)).ptr(addr(out)).i64(n);
          l.i64(periodicB ? periodB : periodA).i32(periodicB ? 1 : 0).i32(op.ordinal());
          kernels.elementwise(l, n / pack(out));
        }
      } else if (!expanded(av, bv, out, op)) {
        try (Launch l = kernels.launch("elementwise.cu", "binary_" + code)) {
          l.ptr(addr(av)).ptr(addr(bv)).ptr(addr(out));
          l.struct(Index8.of(l.arena(), shape, av.strides(), bv.strides())).i64(n);
          l.i32(op.ordinal());
          kernels.elementwise(l, n);
        }
      }
    }
    tensors.releaseDerived(av, a);
    tensors.releaseDerived(bv, b);
    return out;
  }

  /**
   * {@code a op b} into the dense {@code out} through {@code binary_expanded} when one operand is
   * dense in out's layout and the other repeats each value a few times (an {@link Expansion}: a
   * nearest-upsampled or repeated view, as the Wan2.2 decoder's duplicate-up shortcut adds); false,
   * launching nothing, otherwise.
   */
  private boolean expanded(Tensor av, Tensor bv, Tensor out, Backend.BinaryOp op) {
    boolean denseA = av.isContiguous();
    Tensor dense = denseA ? av : bv;
    Tensor other = denseA ? bv : av;
    if (!dense.isContiguous()) {
      return false;
    }
    Expansion e = Expansion.of(other.shape(), other.strides(), out.strides());
    if (e == null) {
      return false;
    }
    try (Launch l =
        kernels.launch("elementwise.cu", "binary_expanded_" + DeviceTensors.code(out.dtype()))) {
      l.ptr(addr(dense)).ptr(addr(other)).ptr(addr(out));
      l.struct(e.own(l.arena())).struct(e.replicaOffsets(l.arena()));
      l.i64(e.values()).i32(e.replicas()).i32(denseA ? 1 : 0).i32(op.ordinal());
      kernels.elementwise(l, e.values());
    }
    return true;
  }

  /**
   * {@code a op b} into F32 for one BF16 and one F32 operand, dense and of one shape (a BF16
   * convolution's result and the F32 residual stream), read as they are: the F32 op of the BF16
   * operand's exact F32 copy, bit for bit, without making the copy. Null for any other operands.
   */
  private Tensor mixed(Tensor a, Tensor b, int[] shape, Backend.BinaryOp op) {
    boolean bf16First = a.dtype() == DType.BF16 && b.dtype() == DType.F32;
    if (!bf16First && !(a.dtype() == DType.F32 && b.dtype() == DType.BF16)) {
      return null;
    }
    long n = a.numel();
    // Everything but the alignment is told before any upload, so the general path that follows a
    // refusal does not upload a host operand twice.
    if (!Arrays.equals(a.shape(), shape)
        || !Arrays.equals(b.shape(), shape)
        || !a.isContiguous()
        || !b.isContiguous()
        || n == 0
        || n % 8 != 0) {
      return null;
    }
    Tensor ad = tensors.onDevice(a);
    Tensor bd = tensors.onDevice(b);
    Tensor h = bf16First ? ad : bd;
    Tensor f = bf16First ? bd : ad;
    Tensor out = null;
    if (packable(8, h, f)) {
      out = tensors.empty(DType.F32, shape);
      try (Launch l = kernels.launch("elementwise.cu", "binary_mixed_packed_bf16_f32")) {
        l.ptr(addr(h)).ptr(addr(f)).ptr(addr(out)).i64(n).i32(bf16First ? 1 : 0);
        l.i32(op.ordinal());
        kernels.elementwise(l, n / 8);
      }
    }
    tensors.releaseDerived(ad, a);
    tensors.releaseDerived(bd, b);
    return out;
  }

  /**
   * The period of a broadcast view that repeats one dense block along its leading dims (strides 0
   * there, the block's own contiguous strides after): the block's element count; 0 for any other
   * view, a dense tensor included.
   */
  static long period(Tensor view) {
    int rank = view.rank();
    long block = 1;
    int d = rank - 1;
    while (d >= 0 && (view.dim(d) == 1 || view.stride(d) == block)) {
      block *= view.dim(d);
      d--;
    }
    for (int i = d; i >= 0; i--) {
      if (view.dim(i) != 1 && view.stride(i) != 0) {
        return 0;
      }
    }
    return block == view.numel() ? 0 : block;
  }

  /** {@code x + y · gate} in one pass; the result has x's dtype in the BF16 mode. */
  public Tensor gatedResidual(Tensor x, Tensor y, Tensor gate) {
    if (!Arrays.equals(x.shape(), y.shape())) {
      throw new IllegalArgumentException(
          "gatedResidual of x " + x + " and y " + y + " (one shape)");
    }
    boolean bf16 = operands.keepsBf16(x) && operands.keepsBf16(y);
    Tensor xd = bf16 ? operands.bf16(x) : tensors.f32(x);
    Tensor yd = bf16 ? operands.bf16(y) : tensors.f32(y);
    RowVectors g = operands.rowVectors(x.shape(), gate);
    Tensor out = tensors.empty(xd.dtype(), x.shape());
    long rows = rows(x);
    if (out.numel() > 0) {
      boolean packed = packable(x.dim(-1), xd, yd, out);
      String kernel =
          (packed ? "gated_residual_packed_" : "gated_residual_") + DeviceTensors.code(out.dtype());
      try (Launch l = kernels.launch("elementwise.cu", kernel)) {
        l.ptr(addr(xd)).ptr(addr(yd)).ptr(addr(g.data().get(0))).ptr(addr(out));
        l.i64(rows).i32(x.dim(-1)).i64(g.groupStride()).i64(g.rowsPerGroup());
        kernels.elementwise(l, packed ? out.numel() / pack(out) : out.numel());
      }
    }
    tensors.releaseDerived(xd, x);
    tensors.releaseDerived(yd, y);
    g.release(tensors, gate);
    if (operands.keepsBf16(x) && out.dtype() != DType.BF16) {
      // A BF16 x with an F32 y: computed in F32, stored as x's dtype.
      Tensor converted = tensors.convert(out, DType.BF16);
      tensors.releaseDerived(out, converted);
      return converted;
    }
    return out;
  }

  public Tensor rope(Tensor x, Tensor cos, Tensor sin) {
    OpShapes.rope(x, cos, sin);
    int l = x.dim(1), h = x.dim(2), half = x.dim(3) / 2;
    Tensor xd = operands.activation(x), cf = tensors.f32(cos), sf = tensors.f32(sin);
    Tensor out = tensors.empty(xd.dtype(), x.shape());
    long pairs = out.numel() / 2;
    if (pairs > 0) {
      // A pack holds pack/2 pairs, which must not straddle a head.
      boolean packed = packable(2 * half, xd, out) && half % (pack(xd) / 2) == 0;
      String kernel = (packed ? "rope_packed_" : "rope_") + DeviceTensors.code(xd.dtype());
      try (Launch launch = kernels.launch("misc.cu", kernel)) {
        launch.ptr(addr(xd)).ptr(addr(cf)).ptr(addr(sf)).ptr(addr(out));
        launch.i64(pairs).i32(l).i32(h).i32(half);
        kernels.elementwise(launch, packed ? pairs / (pack(xd) / 2) : pairs);
      }
    }
    tensors.releaseDerived(xd, x);
    return out;
  }
}
