package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.LowRank;
import dev.stepweave.tensor.ResidualNorm;
import dev.stepweave.tensor.Tensor;
import java.util.Collection;
import java.util.List;
import java.util.function.Supplier;

/**
 * The training forward: a {@link Backend} that computes every operation with the serving backend it
 * wraps, unchanged, and — inside {@link #recording} — also writes each operation that reads a
 * tracked tensor onto a {@link Tape} with its backward rule. A model loaded on it runs its own
 * serving forward, so the training forward's values are the serving forward's bit for bit; the tape
 * adds the gradients.
 *
 * <p>The fused operations whose composition can be recomputed from their inputs alone ({@code
 * modulatedLayerNorm}, {@code rmsNormRope}, {@code gatedResidual}, {@code residualLayerNorm},
 * {@code residualModulatedLayerNorm}, {@code channelNorm}, {@code channelNormAfter}) run the
 * wrapped backend's own kernel forward — on a device one kernel and one BF16 rounding, as serving
 * runs them — and are recorded as one node whose backward recomputes the SPI's composition of
 * primitives from the kept inputs and differentiates that (the CPU's fused results are that
 * composition's, bit for bit); where the composition's rules read only the inputs ({@code
 * rmsNormRope}, {@code gatedResidual}, a residual norm's residual) the node chains those rules
 * instead and recomputes nothing. The rest run as the SPI's defaults, composing recorded
 * primitives: {@code linearGeluTanh} because GELU's backward reads the pre-activation, which the
 * fused kernel does not keep and only the FFN's largest GEMM again could give back; {@code
 * linearStacked} (the same roundings either way), {@code linearLowRank} and {@code addLowRank} (per
 * run of rows and update, whose {@code addLowRankUpdate} is one node chaining its composition's
 * rules) and the load's {@code uploadStacked}. Views ({@link Tensor#reshape}, permute, slice,
 * expand) are not operations at all: the tape follows gradients by storage ({@link Gradients}),
 * kept on the wrapped backend's device. Most backward rules are the wrapped backend's own
 * operations; the rest compute on the host ({@link BackwardRule#onHost}), so on a GPU they download
 * what they read.
 */
public final class RecordingBackend implements Backend {
  private final Backend delegate;
  private final Backend host;
  private final ActivationCheckpointing checkpointing;
  private Tape tape;

  /** Whether the steps of a {@link #chain} (a transformer's blocks) keep their activations. */
  public enum ActivationCheckpointing {
    /** Every operation of every step is recorded with what its backward reads. */
    OFF,
    /**
     * Each chain step is recorded as one operation that keeps only its input: its activations die
     * with the forward, and its backward runs the step again on a tape of its own, then
     * differentiates that — memory of one block instead of all, for a second forward per block.
     */
    PER_CHAIN_STEP
  }

  public RecordingBackend(Backend delegate) {
    this(delegate, ActivationCheckpointing.OFF);
  }

  /**
   * Records over a CPU backend, which also computes the host rules.
   *
   * @throws IllegalArgumentException when {@code delegate} is a device's: name the host backend
   */
  public RecordingBackend(Backend delegate, ActivationCheckpointing checkpointing) {
    this(delegate, delegate, checkpointing);
  }

  /**
   * Records over {@code delegate}; {@code host}, a CPU backend, computes the rules that run on the
   * host and keeps the gradients of host tensors (those a load uploads). For a CPU delegate both
   * are the same backend.
   */
  public RecordingBackend(Backend delegate, Backend host, ActivationCheckpointing checkpointing) {
    if (host.device().kind() != Device.Kind.CPU) {
      throw new IllegalArgumentException(
          "the host rules need a CPU backend beside " + delegate.name() + ", not " + host.name());
    }
    this.delegate = delegate;
    this.host = host;
    this.checkpointing = checkpointing;
  }

  /**
   * Runs {@code forward} with every differentiable operation on a tracked tensor written to {@code
   * tape}, and returns its result. Outside such a call this backend only delegates (evaluation
   * mode). Calls do not nest.
   *
   * @throws IllegalStateException when a recording is already running, or the tape recorded on
   *     another backend before
   */
  public <T> T recording(Tape tape, Supplier<T> forward) {
    if (this.tape != null) {
      throw new IllegalStateException("a recording is already running on this backend");
    }
    tape.recordsOn(delegate, host);
    this.tape = tape;
    try {
      return forward.get();
    } finally {
      this.tape = null;
    }
  }

  private Tensor record(String op, Tensor out, Supplier<BackwardRule> rule, Tensor... inputs) {
    if (tape == null) {
      return out;
    }
    for (Tensor in : inputs) {
      if (tape.tracks(in)) {
        return tape.record(op, out, rule.get(), inputs);
      }
    }
    return out;
  }

  /**
   * A fused operation: {@code kernel} (the wrapped backend's) computes it; when it reads a tracked
   * tensor it is recorded as one node that keeps {@code inputs} and whose backward runs {@code
   * composition} (the same operation as recorded primitives) on a tape of its own, then
   * differentiates that. The recomputation costs memory-bound passes, not the intermediates kept
   * from the forward to the backward.
   */
  private Tensor fused(
      String op, Supplier<Tensor> kernel, Supplier<Tensor> composition, Tensor... inputs) {
    Tensor out = kernel.get();
    if (tape == null || !tracksAny(inputs)) {
      return out;
    }
    Tape outer = tape;
    BackwardRule rule =
        (g, wanted) -> {
          Tape again = outer.childTracking(inputs);
          Tensor output = recording(again, composition);
          return again.backward(output, g).asContributions();
        };
    return outer.record(op, out, rule, inputs);
  }

  private boolean tracksAny(Tensor... inputs) {
    for (Tensor in : inputs) {
      if (tape.tracks(in)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The SPI's chain, with {@link ActivationCheckpointing#PER_CHAIN_STEP}: each step runs unrecorded
   * and is recorded as one node whose backward recomputes it. The recomputation is the same
   * operations on the same inputs, so it reproduces the step's output bit for bit on the CPU.
   */
  @Override
  public Tensor chain(
      Tensor x, int from, int to, ChainStep step, Supplier<? extends Collection<Tensor>> alsoKept) {
    if (tape == null || checkpointing == ActivationCheckpointing.OFF) {
      return Backend.super.chain(x, from, to, step, alsoKept);
    }
    Tensor h = x;
    for (int i = from; i < to; i++) {
      h = checkpointed(i, h, step);
    }
    return h;
  }

  private Tensor checkpointed(int index, Tensor input, ChainStep step) {
    Tape outer = tape;
    if (!outer.tracks(input)) {
      return step.apply(index, input);
    }
    Tape recompute = outer.child();
    tape = null;
    Tensor out;
    try {
      out = step.apply(index, input);
    } finally {
      tape = outer;
    }
    BackwardRule rule =
        (g, wanted) -> {
          Tape again = recompute.child();
          Tensor output = recording(again, () -> step.apply(index, input));
          return again.backward(output, g).asContributions();
        };
    return outer.record("checkpoint", out, rule, input);
  }

  @Override
  public Device device() {
    return delegate.device();
  }

  @Override
  public String name() {
    return "recording(" + delegate.name() + ")";
  }

  /** The rates of the backend it records over. */
  @Override
  public java.util.Optional<dev.stepweave.tensor.DeviceRates> deviceRates() {
    return delegate.deviceRates();
  }

  /**
   * The backend's: a model on this backend keeps its activations in the dtype it serves them in
   * (BF16 on a device's performance mode), so the training forward is the serving forward there
   * too.
   */
  @Override
  public DType activationDType() {
    return delegate.activationDType();
  }

  /**
   * Outside a recording the backend's own (an optimiser's step, whose body records, differentiates
   * and then drops all it made); inside one none: the tape keeps what the forward makes until its
   * backward has run.
   */
  @Override
  public StepMemory stepMemory() {
    return tape == null ? delegate.stepMemory() : Backend.super.stepMemory();
  }

  /** As {@link #stepMemory}: the backend's own outside a recording, a plain call inside one. */
  @Override
  public Tensor scoped(Supplier<Tensor> body) {
    return tape == null ? delegate.scoped(body) : body.get();
  }

  @Override
  public Tensor zeros(DType dtype, int... shape) {
    return delegate.zeros(dtype, shape);
  }

  @Override
  public Tensor upload(Tensor t, DType dtype) {
    return record("upload", delegate.upload(t, dtype), () -> MovementGrads.identity(t), t);
  }

  @Override
  public Tensor download(Tensor t) {
    return record("download", delegate.download(t), () -> MovementGrads.identity(t), t);
  }

  @Override
  public Tensor contiguous(Tensor t) {
    return record("contiguous", delegate.contiguous(t), () -> MovementGrads.identity(t), t);
  }

  @Override
  public Tensor linear(Tensor x, Tensor w, Tensor bias) {
    return record(
        "linear",
        delegate.linear(x, w, bias),
        () -> LinearAlgebraGrads.linear(delegate, x, w, bias),
        x,
        w,
        bias);
  }

  @Override
  public Tensor matmul(Tensor a, Tensor b) {
    Tensor out = delegate.matmul(a, b);
    return record("matmul", out, () -> LinearAlgebraGrads.matmul(delegate, a, b, out), a, b);
  }

  @Override
  public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor bias, float scale) {
    Tensor out = delegate.attention(q, k, v, bias, scale);
    return record(
        "attention",
        out,
        () -> AttentionGrad.of(delegate, new AttentionForward(q, k, v, bias, scale, out)),
        q,
        k,
        v,
        bias);
  }

  /** Not recorded: a backward is not differentiated again. */
  @Override
  public AttentionGradients attentionBackward(
      AttentionForward forward, Tensor gradOut, boolean biasGradient) {
    return delegate.attentionBackward(forward, gradOut, biasGradient);
  }

  @Override
  public Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    Tensor out = delegate.conv3d(x, w, bias, stride, padding);
    int[] s = stride.clone();
    int[] p = padding.clone();
    return record(
        "conv3d", out, () -> ConvolutionGrad.of(delegate, host, x, w, bias, s, p, out), x, w, bias);
  }

  @Override
  public Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
    return record(
        "layerNorm",
        delegate.layerNorm(x, weight, bias, eps),
        () -> NormGrads.layerNorm(delegate, x, weight, bias, eps),
        x,
        weight,
        bias);
  }

  @Override
  public Tensor rmsNorm(Tensor x, Tensor weight, float eps) {
    return record(
        "rmsNorm",
        delegate.rmsNorm(x, weight, eps),
        () -> NormGrads.rmsNorm(delegate, x, weight, eps),
        x,
        weight);
  }

  @Override
  public Tensor l2Normalize(Tensor x, int dim, float eps) {
    return record(
        "l2Normalize",
        delegate.l2Normalize(x, dim, eps),
        () -> NormGrads.l2Normalize(delegate, x, dim, eps),
        x);
  }

  @Override
  public Tensor softmax(Tensor x) {
    Tensor out = delegate.softmax(x);
    return record("softmax", out, () -> NormGrads.softmax(delegate, x, out), x);
  }

  @Override
  public Tensor gelu(Tensor x, boolean tanhApproximation) {
    Tensor out = delegate.gelu(x, tanhApproximation);
    return record("gelu", out, () -> ElementwiseGrads.gelu(delegate, x, out, tanhApproximation), x);
  }

  @Override
  public Tensor silu(Tensor x) {
    Tensor out = delegate.silu(x);
    return record("silu", out, () -> ElementwiseGrads.silu(delegate, x, out), x);
  }

  @Override
  public Tensor unary(Tensor x, UnaryOp op) {
    Tensor out = delegate.unary(x, op);
    return record(
        op.name().toLowerCase(), out, () -> ElementwiseGrads.unary(delegate, x, out, op), x);
  }

  @Override
  public Tensor binary(Tensor a, Tensor b, BinaryOp op) {
    Tensor out = delegate.binary(a, b, op);
    return record(
        op.name().toLowerCase(), out, () -> ElementwiseGrads.binary(delegate, a, b, out, op), a, b);
  }

  @Override
  public Tensor affine(Tensor x, float scale, float shift) {
    Tensor out = delegate.affine(x, scale, shift);
    return record("affine", out, () -> ElementwiseGrads.affine(delegate, x, scale), x);
  }

  @Override
  public Tensor clamp(Tensor x, float min, float max) {
    Tensor out = delegate.clamp(x, min, max);
    return record("clamp", out, () -> ElementwiseGrads.clamp(delegate, x, out, min, max), x);
  }

  @Override
  public Tensor rope(Tensor x, Tensor cos, Tensor sin) {
    return record(
        "rope",
        delegate.rope(x, cos, sin),
        () -> ElementwiseGrads.rope(delegate, x, cos, sin),
        x,
        cos,
        sin);
  }

  @Override
  public Tensor concat(List<Tensor> parts, int dim) {
    List<Tensor> copy = List.copyOf(parts);
    Tensor out = delegate.concat(copy, dim);
    return record(
        "concat", out, () -> MovementGrads.concat(copy, dim, out), copy.toArray(Tensor[]::new));
  }

  @Override
  public Tensor pad(Tensor x, int[] pads, float value) {
    int[] p = pads.clone();
    Tensor out = delegate.pad(x, p, value);
    return record("pad", out, () -> MovementGrads.pad(x, p), x);
  }

  @Override
  public Tensor upsampleNearest2d(Tensor x, int scaleH, int scaleW) {
    return record(
        "upsampleNearest2d",
        delegate.upsampleNearest2d(x, scaleH, scaleW),
        () -> MovementGrads.upsampleNearest2d(delegate, x, scaleH, scaleW),
        x);
  }

  @Override
  public Tensor embedding(Tensor table, Tensor ids) {
    return record(
        "embedding",
        delegate.embedding(table, ids),
        () -> MovementGrads.embedding(delegate, table, ids),
        table,
        ids);
  }

  /** Not recorded: the gradients' own accumulation. */
  @Override
  public void adamw(Tensor parameter, Tensor gradient, Tensor m, Tensor v, AdamWStep step) {
    delegate.adamw(parameter, gradient, m, v, step);
  }

  /**
   * One low-rank update as one node: the SPI's composition computed on the wrapped backend (the
   * same operations and roundings as recording it op by op), its rule the composition's rules
   * chained — the sum's gradient handed to y and into the up factor's linear rule, that rule's
   * gradient of the inner product through the scale into the down factor's — so neither the
   * full-size product nor a copy of the sum's gradient for it is kept between the forward and the
   * backward, and one node stands where four did.
   */
  @Override
  public Tensor addLowRankUpdate(Tensor y, Tensor x, LowRank u) {
    Tensor inner = delegate.affine(delegate.linear(x, u.down(), null), u.scale(), 0f);
    Tensor out = delegate.add(y, delegate.linear(inner, u.up(), null));
    return record(
        "addLowRankUpdate",
        out,
        () -> LinearAlgebraGrads.lowRankUpdate(delegate, y, x, inner, u),
        y,
        x,
        u.down(),
        u.up());
  }

  /** The wrapped backend's (an optimiser's launches for many tensors), as {@link #adamw}. */
  @Override
  public void adamw(List<AdamWTensors> tensors, float gradientScale, AdamWStep step) {
    delegate.adamw(tensors, gradientScale, step);
  }

  /**
   * The wrapped backend's outside a recording (a clipping's norm); inside one, the SPI's
   * composition of recorded operations.
   */
  @Override
  public Tensor sumsOfSquares(List<Tensor> tensors) {
    return tape == null ? delegate.sumsOfSquares(tensors) : Backend.super.sumsOfSquares(tensors);
  }

  /** As {@link #sumsOfSquares}: a backward rule's sum runs on the wrapped backend. */
  @Override
  public Tensor sumMiddle(Tensor x) {
    return tape == null ? delegate.sumMiddle(x) : Backend.super.sumMiddle(x);
  }

  @Override
  public void addInto(Tensor target, Tensor value) {
    delegate.addInto(target, value);
  }

  /** Not recorded: an optimiser's update reaching the device. */
  @Override
  public void copyInto(Tensor target, Tensor value) {
    delegate.copyInto(target, value);
  }

  @Override
  public Tensor sumLastDim(Tensor x) {
    return record("sumLastDim", delegate.sumLastDim(x), () -> MovementGrads.sumLastDim(x), x);
  }

  // ---- fused operations: the kernel forward, the composition's rules backward (see fused) -----

  @Override
  public Tensor modulatedLayerNorm(Tensor x, Tensor shift, Tensor scale, float eps) {
    return fused(
        "modulatedLayerNorm",
        () -> delegate.modulatedLayerNorm(x, shift, scale, eps),
        () -> Backend.super.modulatedLayerNorm(x, shift, scale, eps),
        x,
        shift,
        scale);
  }

  @Override
  public Tensor rmsNormRope(Tensor x, Tensor weight, float eps, int heads, Tensor cos, Tensor sin) {
    return record(
        "rmsNormRope",
        delegate.rmsNormRope(x, weight, eps, heads, cos, sin),
        () -> NormGrads.rmsNormRope(delegate, x, weight, eps, cos, sin),
        x,
        weight,
        cos,
        sin);
  }

  @Override
  public Tensor gatedResidual(Tensor x, Tensor y, Tensor gate) {
    return record(
        "gatedResidual",
        delegate.gatedResidual(x, y, gate),
        () -> ElementwiseGrads.gatedResidual(delegate, x, y, gate),
        x,
        y,
        gate);
  }

  /** Two nodes: the residual from x, y and gate, the norm from the residual. */
  @Override
  public ResidualNorm residualLayerNorm(
      Tensor x, Tensor y, Tensor gate, Tensor weight, Tensor bias, float eps) {
    ResidualNorm k = delegate.residualLayerNorm(x, y, gate, weight, bias, eps);
    Tensor r = residual(k, x, y, gate);
    Tensor normed =
        fused(
            "residualLayerNorm", k::normed, () -> layerNorm(r, weight, bias, eps), r, weight, bias);
    return new ResidualNorm(r, normed);
  }

  @Override
  public ResidualNorm residualModulatedLayerNorm(
      Tensor x, Tensor y, Tensor gate, Tensor shift, Tensor scale, float eps) {
    ResidualNorm k = delegate.residualModulatedLayerNorm(x, y, gate, shift, scale, eps);
    Tensor r = residual(k, x, y, gate);
    Tensor normed =
        fused(
            "residualModulatedLayerNorm",
            k::normed,
            () -> Backend.super.modulatedLayerNorm(r, shift, scale, eps),
            r,
            shift,
            scale);
    return new ResidualNorm(r, normed);
  }

  private Tensor residual(ResidualNorm kernel, Tensor x, Tensor y, Tensor gate) {
    return record(
        "residual",
        kernel.residual(),
        () -> ElementwiseGrads.gatedResidual(delegate, x, y, gate),
        x,
        y,
        gate);
  }

  @Override
  public Tensor channelNorm(Tensor x, Tensor gamma, float eps, boolean silu, DType out) {
    return fused(
        "channelNorm",
        () -> delegate.channelNorm(x, gamma, eps, silu, out),
        () -> Backend.super.channelNorm(x, gamma, eps, silu, out),
        x,
        gamma);
  }

  @Override
  public Tensor channelNormAfter(
      Tensor past, Tensor x, Tensor gamma, float eps, boolean silu, DType out) {
    return fused(
        "channelNormAfter",
        () -> delegate.channelNormAfter(past, x, gamma, eps, silu, out),
        () -> Backend.super.channelNormAfter(past, x, gamma, eps, silu, out),
        past,
        x,
        gamma);
  }
}
