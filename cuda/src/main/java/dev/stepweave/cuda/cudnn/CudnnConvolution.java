package dev.stepweave.cuda.cudnn;

import static dev.stepweave.cuda.cudnn.Cudnn.CUDNN_DATA_BFLOAT16;
import static dev.stepweave.cuda.cudnn.Cudnn.CUDNN_DATA_FLOAT;

import dev.stepweave.cuda.cudnn.CudnnRuntime.Plan;
import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.kernels.Kernels;
import dev.stepweave.cuda.kernels.Launch;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.cuda.tuning.Fastest;
import dev.stepweave.cuda.tuning.TimedChoices;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * 3-D convolution forward (cross-correlation, dilation 1, symmetric zero padding) through cuDNN's
 * backend graph API, for the BF16 mode. A BF16 input (the DiT's activations) runs with BF16 input,
 * filter and output and F32 accumulation: the input packed NCDHW BF16, the filter a cached BF16
 * copy ({@link Bf16Weights}). An F32 input (the VAE's activations, kept F32 as the reference
 * pipeline keeps its VAE in float32) runs on F32 data, which cuDNN computes in TF32 on the tensor
 * cores — as torch does by default for convolutions. The result is a fresh contiguous [N, K, Do,
 * Ho, Wo] tensor of the type asked for: the input's, or F32 from a BF16 input (the VAE's mixed
 * precision: BF16 operands, its F32 stream never rounded), where cuDNN offers an engine for it.
 *
 * <p>For each {@link Key} the choice is made once and cached, trying in order: NCDHW with the bias
 * add fused into the graph (a pointwise ADD after the convolution), NCDHW with the bias added by
 * our kernel, and the same two over channels-last copies; else nothing: {@link #conv3d} returns
 * null and the caller runs its im2col path. Within the first graph that cuDNN takes, the engine is
 * chosen by measurement: the first run of the key times up to {@value #TUNED_CONFIGS} plans of
 * heuristics mode A (configurations needing more workspace than {@link #workspaceCap} allows are
 * passed over) on its own buffers with CUDA events, best of {@value #TIMED_RUNS} runs each, and
 * keeps the fastest (or, of those within {@link #WORKSPACE_SLACK} of it, the one of least
 * workspace) for the rest of the process. A key first met while a CUDA graph records keeps the
 * heuristics' first plan untimed (events cannot be waited on then).
 */
public final class CudnnConvolution implements AutoCloseable {
  // Unique ids of the graph's tensors.
  static final long X = 0;
  static final long W = 1;
  static final long Y = 2;
  static final long BIAS = 3;
  static final long CONV = 4;

  /** How many of heuristics mode A's engine configurations are timed per key. */
  static final int TUNED_CONFIGS = 8;

  /** The least workspace cap, whatever the device: 1 GiB. */
  static final long SMALLEST_WORKSPACE_CAP = 1L << 30;

  /** The largest workspace cap: 8 GiB. */
  static final long LARGEST_WORKSPACE_CAP = 8L << 30;

  /**
   * The most workspace a timed plan may need on a device of {@code deviceBytes}: a twentieth of it,
   * between {@link #SMALLEST_WORKSPACE_CAP} and {@link #LARGEST_WORKSPACE_CAP} (7 GiB on an H200).
   * The tensor-core plans of a 720p VAE decode's full-resolution shapes need more than 1 GiB; under
   * a 1 GiB cap they fell back to a workspace-free engine 50× slower. The workspace lives for one
   * convolution, within the admission budget's headroom.
   */
  static long workspaceCap(long deviceBytes) {
    return Math.clamp(deviceBytes / 20, SMALLEST_WORKSPACE_CAP, LARGEST_WORKSPACE_CAP);
  }

  /**
   * How much slower than the fastest timed plan one with less workspace may be and still be chosen:
   * at 480p the chosen plans' workspaces were the VAE decode's largest single block (1.5 GB).
   */
  static final float WORKSPACE_SLACK = 0.01f;

  /** Timed runs per plan; the best counts (the first may pay for lazy loading). */
  static final int TIMED_RUNS = 2;

  private static final int[] AS_IS = {0, 1, 2, 3, 4};
  // [N, C, D, H, W] → [N, D, H, W, C]: channels-last memory order.
  private static final int[] CHANNELS_LAST = {0, 2, 3, 4, 1};

  /** One size per spatial dim: depth (frames), height, width. */
  record Dims3(int d, int h, int w) {
    static Dims3 of(int[] v) {
      return new Dims3(v[0], v[1], v[2]);
    }

    long[] array() {
      return new long[] {d, h, w};
    }
  }

  /**
   * Everything a plan depends on: batch, input channels and spatial sizes, output channels, filter
   * size, stride, padding, whether there is a bias, the largest power of two up to 16 dividing the
   * input's byte address, the input's dtype (BF16, or F32: TF32 on the tensor cores, filter F32)
   * and the output's: the input's, or F32 for a BF16 input whose products join an F32 stream (the
   * VAE's, which the reference keeps in float32) without a BF16 rounding of their sums. Compute
   * F32, layouts packed per {@link Variant}, so sizes determine the strides.
   */
  record Key(
      int n,
      int c,
      Dims3 input,
      int k,
      Dims3 kernel,
      Dims3 stride,
      Dims3 padding,
      boolean bias,
      int alignment,
      DType inputType,
      DType outputType) {
    boolean f32() {
      return inputType == DType.F32;
    }

    static int cudnnDataType(DType dtype) {
      return dtype == DType.F32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_BFLOAT16;
    }

    Dims3 output() {
      return new Dims3(
          (input.d() + 2 * padding.d() - kernel.d()) / stride.d() + 1,
          (input.h() + 2 * padding.h() - kernel.h()) / stride.h() + 1,
          (input.w() + 2 * padding.w() - kernel.w()) / stride.w() + 1);
    }

    @Override
    public String toString() {
      return String.format(
          "x [%d,%d,%d,%d,%d] w [%d,%d,%d,%d,%d] stride %s pad %s%s%s",
          n,
          c,
          input.d(),
          input.h(),
          input.w(),
          k,
          c,
          kernel.d(),
          kernel.h(),
          kernel.w(),
          List.of(stride.d(), stride.h(), stride.w()),
          List.of(padding.d(), padding.h(), padding.w()),
          bias ? " +bias" : "",
          (f32() ? " F32" : "") + (outputType == inputType ? "" : " out " + outputType));
    }
  }

  /** The graphs tried, in order; the fused ones only for a convolution with a bias. */
  enum Variant {
    NCDHW_BIAS_FUSED("NCDHW, bias fused", false, true),
    NCDHW("NCDHW", false, false),
    CHANNELS_LAST_BIAS_FUSED("channels-last copies, bias fused", true, true),
    CHANNELS_LAST("channels-last copies", true, false);

    final String label;
    final boolean channelsLast;
    final boolean biasFused;

    Variant(String label, boolean channelsLast, boolean biasFused) {
      this.label = label;
      this.channelsLast = channelsLast;
      this.biasFused = biasFused;
    }
  }

  /**
   * A key's outcome: a plan, its variant and what it is, or null and why cuDNN was not used. While
   * {@code untimed} holds more than one plan, the first run times them and replaces the choice;
   * until then {@code plan} is the heuristics' first.
   */
  private record Choice(
      Plan plan, Variant variant, String description, List<Plan> untimed, String passedOver) {
    /** The workspace of the run that uses this choice (the largest of the plans it times). */
    long workspaceBytes() {
      return untimed.stream().mapToLong(Plan::workspaceBytes).max().orElse(plan.workspaceBytes());
    }
  }

  private final DeviceTensors tensors;
  private final Kernels kernels;
  private final CudnnRuntime cudnn;
  private final Bf16Weights weights;
  private final Map<Key, Choice> choices = new LinkedHashMap<>();
  private TimedChoices timedBefore;

  private final long maxWorkspace;

  public CudnnConvolution(DeviceTensors tensors, CudnnRuntime cudnn) {
    this.tensors = tensors;
    this.kernels = tensors.kernels();
    this.cudnn = cudnn;
    this.weights = new Bf16Weights(tensors);
    this.maxWorkspace = workspaceCap(tensors.context().memoryInfo()[1]);
  }

  /**
   * Tells the cached BF16 weight copies that {@code storage} was written in place (an optimiser's
   * step): those of its weights are made again on their next use.
   */
  public void overwritten(Storage storage) {
    weights.overwritten(storage);
  }

  /**
   * The convolution of validated x [N, C, D, H, W] with w [K, C, kd, kh, kw] plus {@code bias} [K]
   * (or none), as [N, K, Do, Ho, Wo] in {@code out} (x's type, or F32 for a BF16 x), or null when
   * cuDNN is missing or refuses this shape and these types.
   */
  public Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding, DType out) {
    if (x.numel() == 0 || w.numel() == 0 || !cudnn.ready()) {
      return null;
    }
    Tensor xd = tensors.onDevice(x);
    Key key = key(xd, w, bias, stride, padding, out);
    Choice choice = choices.computeIfAbsent(key, this::choose);
    Tensor y = choice.plan() == null ? null : run(key, choice, xd, w, bias);
    tensors.releaseDerived(xd, x);
    return y;
  }

  /** What runs this convolution: cuDNN's variant and engine, or why cuDNN does not. */
  public String describe(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding, DType out) {
    if (!cudnn.ready()) {
      return "not cuDNN: " + cudnn.unavailable();
    }
    Tensor xd = tensors.onDevice(x);
    String description =
        choices.computeIfAbsent(key(xd, w, bias, stride, padding, out), this::choose).description();
    tensors.releaseDerived(xd, x);
    return description;
  }

  /** Every shape seen so far and what ran it, one per line. */
  public String paths() {
    if (choices.isEmpty()) {
      return cudnn.unavailable() == null ? "none yet" : "not cuDNN: " + cudnn.unavailable();
    }
    return choices.entrySet().stream()
        .map(e -> e.getKey() + ": " + e.getValue().description())
        .collect(Collectors.joining("\n"));
  }

  private Tensor run(Key key, Choice choice, Tensor x, Tensor w, Tensor bias) {
    Variant variant = choice.variant();
    int[] order = variant.channelsLast ? CHANNELS_LAST : AS_IS;
    Tensor xb = key.f32() ? tensors.f32(x) : packedBf16(x, order);
    Tensor wb = key.f32() ? tensors.f32(w) : weights.get(w, order);
    // The bias stays F32 in either type: a rounded bias shifts a whole channel alike (see graph).
    Tensor bb = variant.biasFused ? tensors.f32(bias) : null;
    Dims3 o = key.output();
    int[] ncdhw = {key.n(), key.k(), o.d(), o.h(), o.w()};
    int[] yShape = new int[5];
    for (int i = 0; i < 5; i++) {
      yShape[i] = ncdhw[order[i]];
    }
    Tensor y = tensors.empty(key.outputType(), yShape);
    long wsBytes = choice.workspaceBytes();
    // 8-byte elements: a workspace of several GiB still counts its elements in an int.
    Tensor ws = wsBytes == 0 ? null : tensors.empty(DType.I64, Math.toIntExact((wsBytes + 7) / 8));
    long[] uids = bb == null ? new long[] {X, W, Y} : new long[] {X, W, Y, BIAS};
    long[] pointers =
        bb == null
            ? new long[] {addr(xb), addr(wb), addr(y)}
            : new long[] {addr(xb), addr(wb), addr(y), addr(bb)};
    long wsAddress = ws == null ? 0L : addr(ws);
    Plan plan =
        choice.untimed().isEmpty() ? choice.plan() : tune(key, choice, wsAddress, uids, pointers);
    cudnn.execute(plan, wsAddress, uids, pointers);
    // Temporaries go back once the work reading them is issued (stream order).
    tensors.releaseDerived(ws, y);
    tensors.releaseDerived(xb, x);
    if (key.f32()) {
      tensors.releaseDerived(wb, w);
    } else {
      weights.release(wb, w);
    }
    if (bb != null) {
      tensors.releaseDerived(bb, bias);
    }
    Tensor out = y;
    if (variant.channelsLast) {
      // [N, Do, Ho, Wo, K] viewed as [N, K, Do, Ho, Wo], copied densely.
      out = tensors.convert(y.permute(0, 4, 1, 2, 3), key.outputType());
      tensors.releaseDerived(y, out);
    }
    if (bias != null && !variant.biasFused) {
      addBias(out, bias);
    }
    return out;
  }

  /** Adds {@code bias[k]} to every element of channel k of contiguous NCDHW {@code out}. */
  private void addBias(Tensor out, Tensor bias) {
    Tensor bf = tensors.f32(bias);
    long n = out.numel();
    long inner = n / out.dim(0) / out.dim(1);
    String kernel = "channel_bias_" + DeviceTensors.code(out.dtype());
    try (Launch l = kernels.launch("misc.cu", kernel)) {
      l.ptr(addr(out)).ptr(addr(bf)).i64(n).i64(inner).i32(out.dim(1));
      kernels.elementwise(l, n);
    }
    tensors.releaseDerived(bf, bias);
  }

  /** Device tensor {@code x} as packed BF16 in memory order {@code order} (itself if it is). */
  private Tensor packedBf16(Tensor x, int[] order) {
    Tensor view = x.permute(order);
    if (view.dtype() == DType.BF16 && view.isContiguous()) {
      return x;
    }
    Tensor packed = tensors.empty(DType.BF16, view.shape());
    tensors.copy(view, packed);
    return packed.permute(inverse(order));
  }

  private static int[] inverse(int[] order) {
    int[] inv = new int[order.length];
    for (int i = 0; i < order.length; i++) {
      inv[order[i]] = i;
    }
    return inv;
  }

  /**
   * The plan key of device input {@code x}. Its alignment is the address's when {@link #packedBf16}
   * may pass {@code x} as it is (in either layout), else that of a fresh copy; a variant that
   * copies anyway gets memory at least this aligned.
   */
  private static Key key(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding, DType out) {
    boolean asIs =
        x.dtype() == DType.F32
            ? x.isContiguous()
            : x.dtype() == DType.BF16
                && (x.isContiguous() || x.permute(CHANNELS_LAST).isContiguous());
    int alignment =
        asIs ? CudnnRuntime.alignment(DeviceTensors.address(x)) : CudnnRuntime.MAX_ALIGNMENT;
    return new Key(
        x.dim(0),
        x.dim(1),
        new Dims3(x.dim(2), x.dim(3), x.dim(4)),
        w.dim(0),
        new Dims3(w.dim(2), w.dim(3), w.dim(4)),
        Dims3.of(stride),
        Dims3.of(padding),
        bias != null,
        alignment,
        x.dtype() == DType.F32 ? DType.F32 : DType.BF16,
        out);
  }

  private static long addr(Tensor t) {
    return DeviceTensors.address(t);
  }

  // ---- choosing a plan ------------------------------------------------------------------------

  /**
   * Times {@code choice}'s plans on this run's buffers (the output is overwritten by the run that
   * follows), records the fastest as the key's choice and returns it. While a CUDA graph records,
   * keeps the heuristics' first instead.
   */
  private Plan tune(Key key, Choice choice, long workspace, long[] uids, long[] pointers) {
    Plan plan = choice.plan();
    String how;
    if (tensors.context().isCapturing()) {
      how = "heuristics' first of " + choice.untimed().size() + ", untimed (met in a CUDA graph)";
    } else {
      Fastest.Timed<Plan> timed =
          Fastest.of(
              choice.untimed(),
              TIMED_RUNS,
              p -> tensors.context().time(() -> cudnn.execute(p, workspace, uids, pointers)),
              p -> "engine " + p.engine(),
              Plan::workspaceBytes,
              WORKSPACE_SLACK);
      if (timed == null) {
        how = "heuristics' first; every timed plan failed";
      } else {
        plan = timed.choice();
        timedBefore()
            .record(
                key + "/" + choice.variant().label, choice.untimed().indexOf(plan), plan.engine());
        how =
            String.format(
                "least workspace within %.0f %% of the fastest of %d timed: %.3f ms [%s]",
                100 * WORKSPACE_SLACK,
                choice.untimed().size(),
                timed.ms(),
                String.join(", ", timed.times()));
      }
    }
    choices.put(
        key,
        new Choice(
            plan,
            choice.variant(),
            describe(choice.variant(), key, plan, how, choice.passedOver()),
            List.of(),
            choice.passedOver()));
    return plan;
  }

  /** A cuDNN choice in words: variant, engine, how it was chosen, workspace. */
  private String describe(Variant variant, Key key, Plan plan, String how, String passedOver) {
    return String.format(
        "cuDNN %s conv fprop, %s%s, engine %s (%s), workspace %d B%s",
        cudnn.version(),
        variant.label,
        key.bias() && !variant.biasFused
            ? " + channel_bias_" + DeviceTensors.code(key.outputType())
            : "",
        plan.engine(),
        how,
        plan.workspaceBytes(),
        passedOver);
  }

  private Choice choose(Key key) {
    // Building a plan may compile and load kernels: this thread needs the context.
    tensors.context().bind();
    List<String> refusals = new ArrayList<>();
    for (Variant variant : Variant.values()) {
      if ((variant.biasFused && !key.bias()) || (variant.channelsLast && key.f32())) {
        continue;
      }
      CudnnDescriptors owned = new CudnnDescriptors(cudnn.api());
      try {
        CudnnRuntime.Candidates candidates =
            CudnnRuntime.candidates(
                owned,
                graph(owned, cudnn.handle(), key, variant),
                TUNED_CONFIGS,
                maxWorkspace,
                CudnnRuntime.LOSSY_NOTES,
                refusals,
                variant.label);
        if (!candidates.plans().isEmpty()) {
          return choice(key, variant, candidates);
        }
      } catch (CudaException e) {
        refusals.add(variant.label + ": " + e.getMessage());
      }
      owned.close();
    }
    return new Choice(
        null,
        null,
        "not cuDNN " + cudnn.version() + ": " + String.join("; ", refusals),
        List.of(),
        "");
  }

  /**
   * The choice among a variant's candidates: the only one, or the heuristics' first until the key's
   * first run times them all (the description says which, and what was passed over).
   */
  private Choice choice(Key key, Variant variant, CudnnRuntime.Candidates candidates) {
    List<Plan> plans = candidates.plans();
    String passedOver =
        (candidates.overWorkspace() == 0
                ? ""
                : "; "
                    + candidates.overWorkspace()
                    + " configuration(s) over the "
                    + maxWorkspace
                    + " B workspace cap passed over")
            + (candidates.lossy() == 0
                ? ""
                : "; "
                    + candidates.lossy()
                    + " configuration(s) with reduced-precision reduction, FFT or Winograd"
                    + " passed over");
    String stored = key + "/" + variant.label;
    var earlier = timedBefore().lookup(stored, i -> plans.get(i).engine(), plans.size());
    if (plans.size() > 1 && earlier.isPresent()) {
      Plan plan = plans.get(earlier.get());
      String how =
          "fastest of " + plans.size() + " when an earlier process timed them (on-disk choice)";
      return new Choice(
          plan, variant, describe(variant, key, plan, how, passedOver), List.of(), passedOver);
    }
    if (plans.size() == 1) {
      return new Choice(
          plans.getFirst(),
          variant,
          describe(variant, key, plans.getFirst(), "the only candidate", passedOver),
          List.of(),
          passedOver);
    }
    String how = "heuristics' first of " + plans.size() + ", timed at the first run";
    return new Choice(
        plans.getFirst(),
        variant,
        describe(variant, key, plans.getFirst(), how, passedOver),
        plans,
        passedOver);
  }

  /** The choices earlier processes timed, beside the compiled kernels (read on first use). */
  private TimedChoices timedBefore() {
    if (timedBefore == null) {
      timedBefore =
          TimedChoices.open(
              tensors.kernels().cacheDir(),
              "cudnn-conv",
              tensors.context().name(),
              tensors.context().arch(),
              "cudnn" + cudnn.version());
    }
    return timedBefore;
  }

  /** Destroys the cached plans (the runtime owns the handle). */
  @Override
  public void close() {
    for (Choice c : choices.values()) {
      if (c.plan() != null) {
        c.plan().owned().close();
      }
    }
    choices.clear();
  }

  // ---- the graph ------------------------------------------------------------------------------

  /**
   * X ⋆ W → Y as one convolution-forward operation (alpha 1, beta 0), or, for a fused variant, X ⋆
   * W into a virtual F32 tensor plus the F32 [1, K, 1, 1, 1] bias → Y (X and W in the key's input
   * type, Y in its output type). All tensors are dims [N, C, D, H, W] (filter [K, C, kd, kh, kw])
   * with packed strides in NCDHW or channels-last order.
   */
  static CudnnDescriptor graph(CudnnDescriptors g, long cudnnHandle, Key key, Variant variant) {
    boolean cl = variant.channelsLast;
    Dims3 in = key.input(), f = key.kernel(), o = key.output();
    long[] xDims = {key.n(), key.c(), in.d(), in.h(), in.w()};
    long[] wDims = {key.k(), key.c(), f.d(), f.h(), f.w()};
    long[] yDims = {key.n(), key.k(), o.d(), o.h(), o.w()};
    CudnnDescriptor x = io(g, key.inputType(), X, xDims, cl, key.alignment());
    CudnnDescriptor w = io(g, key.inputType(), W, wDims, cl, CudnnRuntime.MAX_ALIGNMENT);
    CudnnDescriptor y = io(g, key.outputType(), Y, yDims, cl, CudnnRuntime.MAX_ALIGNMENT);
    CudnnDescriptor convolution =
        g.create(Cudnn.CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)
            .dataType(Cudnn.CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_DATA_FLOAT)
            .enumValue(
                Cudnn.CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                Cudnn.CUDNN_TYPE_CONVOLUTION_MODE,
                Cudnn.CUDNN_CROSS_CORRELATION)
            .int64s(Cudnn.CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 3)
            .int64s(Cudnn.CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, key.padding().array())
            .int64s(Cudnn.CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, key.padding().array())
            .int64s(Cudnn.CUDNN_ATTR_CONVOLUTION_DILATIONS, 1, 1, 1)
            .int64s(Cudnn.CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, key.stride().array())
            .finish();
    CudnnDescriptor convOut =
        variant.biasFused
            ? CudnnRuntime.tensor(
                g,
                CONV,
                CUDNN_DATA_FLOAT,
                yDims,
                packedStrides(yDims, cl),
                CudnnRuntime.MAX_ALIGNMENT,
                true)
            : y;
    CudnnDescriptor fprop =
        g.create(Cudnn.CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR)
            .descriptors(Cudnn.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x)
            .descriptors(Cudnn.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
            .descriptors(Cudnn.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, convOut)
            .descriptors(Cudnn.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, convolution)
            .float32(Cudnn.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1f)
            .float32(Cudnn.CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0f)
            .finish();
    if (!variant.biasFused) {
      return CudnnRuntime.operationGraph(g, cudnnHandle, fprop);
    }
    // An F32 bias whatever the data type: rounding it to BF16 would move every output of a channel
    // by the same amount, an error that does not average out over the image.
    long[] biasDims = {1, key.k(), 1, 1, 1};
    CudnnDescriptor bias =
        CudnnRuntime.tensor(
            g,
            BIAS,
            CUDNN_DATA_FLOAT,
            biasDims,
            packedStrides(biasDims, cl),
            CudnnRuntime.MAX_ALIGNMENT,
            false);
    CudnnDescriptor add = CudnnRuntime.pointwise(g, Cudnn.CUDNN_POINTWISE_ADD, convOut, bias, y);
    return CudnnRuntime.operationGraph(g, cudnnHandle, fprop, add);
  }

  /** A graph input or output of {@code dtype} with packed strides. */
  private static CudnnDescriptor io(
      CudnnDescriptors g, DType dtype, long uid, long[] dims, boolean channelsLast, int alignment) {
    return CudnnRuntime.tensor(
        g,
        uid,
        Key.cudnnDataType(dtype),
        dims,
        packedStrides(dims, channelsLast),
        alignment,
        false);
  }

  /**
   * Element strides of packed [N, C, D, H, W] dims: NCDHW order, or channels-last ([N, D, H, W, C]
   * in memory).
   */
  static long[] packedStrides(long[] dims, boolean channelsLast) {
    long c = dims[1], d = dims[2], h = dims[3], w = dims[4];
    return channelsLast
        ? new long[] {d * h * w * c, 1, h * w * c, w * c, c}
        : new long[] {c * d * h * w, d * h * w, h * w, w, 1};
  }
}
