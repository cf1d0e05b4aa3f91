package dev.stepweave.cuda;

import dev.stepweave.cuda.blas.Gemm;
import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.graph.CudaGraphs;
import dev.stepweave.cuda.graph.GraphStats;
import dev.stepweave.cuda.kernels.KernelCompiler;
import dev.stepweave.cuda.kernels.Kernels;
import dev.stepweave.cuda.memory.ComponentPools;
import dev.stepweave.cuda.memory.DeviceAllocator;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.cuda.memory.MemoryScope;
import dev.stepweave.cuda.memory.VirtualMemoryPool;
import dev.stepweave.cuda.ops.CudaOps;
import dev.stepweave.cuda.ops.LowRankOps;
import dev.stepweave.cuda.ops.MatrixOps;
import dev.stepweave.cuda.ops.RateProbe;
import dev.stepweave.cuda.tuning.MeasuredRates;
import dev.stepweave.tensor.AttentionBackwardByOps;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.DeviceMemory;
import dev.stepweave.tensor.DeviceRates;
import dev.stepweave.tensor.Fault;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.LowRank;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.ResidualNorm;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * {@link Backend} on one CUDA device. Tensors live in device memory (a {@link Storage} whose
 * segment holds a device address and is never dereferenced by Java); storage dtypes are F32, BF16,
 * I64 and I32. Compute follows the CPU backend's F32 semantics: inputs of any view or storage dtype
 * are gathered to contiguous F32 where a kernel needs it, GEMMs accumulate in F32 (a BF16 weight
 * makes a BF16×BF16→F32 GEMM), and results are F32. In {@link Precision#BF16} the activation ops
 * (linear, norms, elementwise maps, rope, attention and the fused ops) keep a BF16 input BF16: they
 * read and write BF16 and compute in F32 inside the kernels; binary ops give BF16 when both
 * operands are BF16, F32 otherwise (torch's promotion); the other ops return F32. cuDNN attention
 * (BF16 mode, no bias) and cuDNN convolution (BF16 mode) return BF16 whatever their inputs.
 *
 * <p>Not thread-safe: one thread issues the work (like a CUDA stream, which it owns).
 *
 * <p>Consistency: our kernels are deterministic and row-independent, but cuBLASLt may choose a
 * different algorithm for a different M, so {@link #linear} is run-to-run deterministic for a fixed
 * shape but not bit-identical across batch sizes (unlike the CPU backend).
 */
public final class CudaBackend implements Backend, AutoCloseable {
  private final CudaContext context;
  private final Precision precision;
  private final DeviceAllocator allocator;
  // sumMiddle's rows of ones, by length: a few KB each, outside every scope.
  private final java.util.Map<Integer, Tensor> onesRows =
      new java.util.concurrent.ConcurrentHashMap<>();
  private final ComponentPools pools;
  private final DeviceTensors tensors;
  private final Storage gemmWorkspace;
  private final Gemm gemm;
  private final CudaOps ops;
  private final CudaGraphs graphs;

  private CudaBackend(CudaContext context, Path kernelCache, Precision precision) {
    this.context = context;
    this.precision = precision;
    Device device = Device.cuda(context.device());
    this.allocator = new DeviceAllocator(device, context);
    this.pools = new ComponentPools(context, device);
    this.tensors = new DeviceTensors(context, allocator, pools, new Kernels(context, kernelCache));
    this.gemmWorkspace = allocator.allocate(Gemm.workspaceBytes());
    this.gemm = new Gemm(context, gemmWorkspace.segment().address(), kernelCache);
    this.ops = new CudaOps(tensors, gemm, precision);
    this.graphs = new CudaGraphs(tensors, allocator);
  }

  /**
   * An F32-precision backend on device {@code ordinal}, kernels cached in the default cache
   * directory.
   */
  public static CudaBackend open(int ordinal) {
    return open(ordinal, Precision.F32);
  }

  public static CudaBackend open(int ordinal, Precision precision) {
    return open(ordinal, KernelCompiler.defaultCacheDir(), precision);
  }

  public static CudaBackend open(int ordinal, Path kernelCache, Precision precision) {
    if (precision != Precision.F32 && precision != Precision.BF16) {
      throw new IllegalArgumentException(
          "the CUDA backend computes in f32 or bf16, not " + precision.wireName());
    }
    CudaContext context = CudaContext.open(ordinal);
    return new CudaBackend(context, kernelCache, precision);
  }

  public Precision precision() {
    return precision;
  }

  public CudaContext context() {
    return context;
  }

  /** The device tensors under this backend: what its op families allocate and copy with. */
  public DeviceTensors tensors() {
    return tensors;
  }

  /** Bytes of device memory held by this backend's allocator (live tensors and cache). */
  public long reservedBytes() {
    return allocator.reservedBytes();
  }

  /** Bytes of tensors live now (allocated and not yet released). */
  public long liveBytes() {
    return allocator.liveBytes();
  }

  /** The most bytes of tensors that were live at once. */
  public long peakLiveBytes() {
    return allocator.peakLiveBytes();
  }

  /** The most bytes this backend's allocator held from the driver at once. */
  public long peakReservedBytes() {
    return allocator.peakReservedBytes();
  }

  /**
   * Restarts {@link #peakLiveBytes} and {@link #peakReservedBytes} from the current figures, the
   * garbage of earlier work collected first.
   */
  public void resetPeaks() {
    allocator.resetPeaks();
  }

  /**
   * Starts or stops the allocator's census of allocation sites (slow: for benchmarks); {@link
   * #liveAtPeak} reports it.
   */
  public void census(boolean on) {
    allocator.census(on);
  }

  /** Which allocation sites held the live bytes near their latest high, largest first. */
  public String liveAtPeak() {
    return allocator.censusAtPeak();
  }

  // ---- component pools (see ComponentPools) --------------------------------------------------

  /**
   * Runs {@code load} with every device tensor it makes placed in {@code component}'s {@link
   * VirtualMemoryPool} (made on first use; one per component, growing in whole chunks of the VMM
   * granularity), except the staging copies of uploads converted on the device. Such tensors are
   * never recycled by the caching allocator; {@link #releaseComponent} frees them.
   */
  @Override
  public <T> T loadingComponent(String component, Supplier<T> load) {
    return pools.loading(component, load);
  }

  /**
   * Waits for the stream, copies {@code component}'s pool to host memory and releases its physical
   * memory; its tensors keep their addresses and must not be used until {@link #wakeComponent}.
   */
  @Override
  public void sleepComponent(String component) {
    context.bind();
    pools.sleep(component);
  }

  /** Maps physical memory again under {@code component}'s addresses and restores its contents. */
  @Override
  public void wakeComponent(String component) {
    context.bind();
    pools.wake(component);
  }

  @Override
  public void releaseComponent(String component) {
    context.bind();
    pools.release(component);
  }

  /** Physical device bytes {@code component}'s pool holds now (zero while asleep). */
  public long reservedBytes(String component) {
    return pools.pool(component).reservedBytes();
  }

  /** {@code component}'s pool (tests look at its chunk size and range). */
  public VirtualMemoryPool componentPool(String component) {
    return pools.pool(component);
  }

  /**
   * {@code cuMemGetInfo}'s total and free bytes, what the caching allocator holds, and every
   * component pool's figures.
   */
  @Override
  public Optional<DeviceMemory> deviceMemory() {
    context.bind();
    long[] info = context.memoryInfo();
    return Optional.of(
        new DeviceMemory(info[1], info[0], allocator.reservedBytes(), pools.report()));
  }

  /** Opens a scope (nested in the open one) whose tensors the caller releases; see MemoryScope. */
  public MemoryScope openScope() {
    return MemoryScope.open(allocator);
  }

  /**
   * Records {@code body} as a CUDA graph per key and replays it (see {@link CudaGraphs}): the first
   * call for a key runs the body eagerly, then records it on static copies of the inputs into a
   * memory pool the graph keeps; later calls copy the inputs in, launch the graph and return a copy
   * of its output. A host operation inside the body fails the recording with an {@link
   * IllegalStateException}.
   */
  @Override
  public Tensor replayable(GraphKey key, List<Tensor> inputs, Function<List<Tensor>, Tensor> body) {
    return graphs.run(key, inputs, body);
  }

  /** What the graph cache did and holds. */
  public GraphStats graphStats() {
    return graphs.stats();
  }

  /** Each long-replaying graph key compared with an eager run, and what was kept, one per line. */
  public String graphComparisons() {
    return graphs.comparisons();
  }

  /**
   * Keeps at most {@code n} recorded graphs (least recently used freed first); 0 runs {@link
   * #replayable} bodies eagerly.
   */
  public void graphCapacity(int n) {
    graphs.capacity(n);
  }

  /** Frees every recorded graph and its memory. */
  public void clearGraphs() {
    graphs.clear();
  }

  @Override
  public Tensor scoped(Supplier<Tensor> body) {
    try (MemoryScope scope = openScope()) {
      Tensor out = body.get();
      scope.releaseExcept(out);
      return out;
    }
  }

  @Override
  public Tensor chain(
      Tensor x, int from, int to, ChainStep step, Supplier<? extends Collection<Tensor>> alsoKept) {
    try (MemoryScope scope = openScope()) {
      Tensor h = x;
      for (int i = from; i < to; i++) {
        h = step.apply(i, h);
        // The previous result and this step's intermediates die here; x was made outside, and
        // what alsoKept lists passes, with the result, to the enclosing scope when this closes.
        List<Tensor> keep = new ArrayList<>(alsoKept.get());
        keep.add(h);
        scope.releaseExcept(keep.toArray(Tensor[]::new));
      }
      return h;
    }
  }

  @Override
  public StepMemory stepMemory() {
    DeviceAllocator.Holding holding = allocator.openHolding();
    return new StepMemory() {
      @Override
      public void step(Runnable body, Supplier<? extends Collection<Tensor>> survivors) {
        holding.step(body, () -> survivors.get().stream().map(Tensor::storage).toList());
      }

      @Override
      public void releaseNow(Tensor dead) {
        allocator.release(dead.storage());
      }

      @Override
      public void end() {
        holding.end();
      }
    };
  }

  @Override
  public DType activationDType() {
    return precision == Precision.BF16 ? DType.BF16 : DType.F32;
  }

  /**
   * Cached blocks beyond live tensors that {@link #trim} keeps for reuse: enough for the next
   * request's steps to allocate without the driver, far below a decode's peak.
   */
  static final long TRIM_KEEP_BYTES = 8L << 30;

  /** Frees the allocator's cached blocks when they exceed {@link #TRIM_KEEP_BYTES}. */
  @Override
  public void trim() {
    trim(TRIM_KEEP_BYTES);
  }

  /** Frees the allocator's cached blocks when they exceed {@code keepBytes}. */
  void trim(long keepBytes) {
    allocator.trim(keepBytes);
  }

  private DeviceRates rates;

  /**
   * Measured once per device and activation dtype ({@link RateProbe}) and kept beside the compiled
   * kernels ({@link MeasuredRates}), so later processes read them.
   */
  @Override
  public synchronized Optional<DeviceRates> deviceRates() {
    if (rates == null) {
      rates =
          MeasuredRates.readOrMeasure(
              tensors.kernels().cacheDir(),
              context.name(),
              context.arch(),
              activationDType().name(),
              () -> {
                try (MemoryScope scope = openScope()) {
                  return RateProbe.measure(ops, tensors, scope, activationDType());
                }
              });
    }
    return Optional.of(rates);
  }

  /** Waits for all issued work. */
  @Override
  public void synchronize() {
    context.synchronize();
    tensors.awaitDownloads();
  }

  @Override
  public Device device() {
    return tensors.device();
  }

  @Override
  public String name() {
    return device() + " (" + context.name() + ", " + context.arch() + ")";
  }

  // ---- memory ---------------------------------------------------------------------------------

  @Override
  public Tensor zeros(DType dtype, int... shape) {
    return tensors.zeros(dtype, shape);
  }

  @Override
  public Tensor upload(Tensor t, DType dtype) {
    return tensors.upload(t, dtype);
  }

  @Override
  public Tensor uploadStacked(List<Tensor> parts, DType dtype) {
    return tensors.uploadStacked(parts, dtype);
  }

  @Override
  public Tensor download(Tensor t) {
    return tensors.download(t);
  }

  @Override
  public void downloadInto(Tensor t, Tensor into) {
    tensors.downloadInto(t, into);
  }

  @Override
  public java.util.function.Supplier<Tensor> downloadQueued(Tensor t) {
    return tensors.downloadQueued(t);
  }

  @Override
  public java.util.function.Supplier<Tensor> downloadQueuedInto(
      Tensor t, java.util.function.Supplier<Tensor> into) {
    return tensors.downloadQueuedInto(t, into);
  }

  @Override
  public Tensor contiguous(Tensor t) {
    return tensors.contiguous(t);
  }

  // ---- compute (see CudaOps) -------------------------------------------------------------------

  @Override
  public Tensor linear(Tensor x, Tensor w, Tensor bias) {
    return ops.matrix().linear(x, w, bias, false);
  }

  /** One strided-batched GEMM for all the layers where it applies (see {@link MatrixOps}). */
  @Override
  public List<Tensor> linearStacked(Tensor x, Tensor w, Tensor bias) {
    return ops.matrix().stacksInOneGemm(x, w)
        ? ops.matrix().linearStacked(x, w, bias)
        : Backend.super.linearStacked(x, w, bias);
  }

  /** Every row's updates in a few launches for all rows (see {@link LowRankOps}). */
  @Override
  public Tensor addLowRank(Tensor y, Tensor x, List<List<LowRank>> rows) {
    return ops.lowRank().addLowRank(y, x, rows);
  }

  /**
   * The updates folded into one weight per group of rows sharing them where that moves fewer bytes
   * than passing over the activations again, else {@link #addLowRank} (see {@link LowRankOps}).
   */
  @Override
  public Tensor linearLowRank(
      Tensor x, Tensor w, Tensor bias, boolean geluTanh, List<List<LowRank>> rows) {
    return ops.lowRank().linearLowRank(x, w, bias, geluTanh, rows);
  }

  /** Which way {@link #linearLowRank} of these arguments runs, in words. */
  public String lowRankPath(Tensor x, Tensor w, boolean geluTanh, List<List<LowRank>> rows) {
    return ops.lowRank().path(x, w, geluTanh, rows);
  }

  @Override
  public Tensor matmul(Tensor a, Tensor b) {
    return ops.matrix().matmul(a, b);
  }

  @Override
  public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor bias, float scale) {
    return ops.attention().attention(q, k, v, bias, scale);
  }

  /**
   * The attention backward, every step on the device: flash.cu's backward kernels where they run
   * (the BF16 mode without a bias, {@code AttentionOps.flashBackward}), else this backend's own
   * GEMMs, softmax and elementwise ops ({@link AttentionBackwardByOps}) in query chunks whose
   * scores fit the ops' scratch budget.
   */
  @Override
  public AttentionGradients attentionBackward(
      AttentionForward forward, Tensor gradOut, boolean biasGradient) {
    AttentionGradients flash = ops.attention().flashBackward(forward, gradOut);
    return flash != null
        ? flash
        : AttentionBackwardByOps.backward(
            this, forward, gradOut, biasGradient, CudaOps.SCRATCH_BUDGET_BYTES);
  }

  /** Which implementation runs bias-free {@link #attention} of these inputs, in words. */
  public String attentionPath(Tensor q, Tensor k, Tensor v) {
    return ops.attention().attentionPath(q, k, v);
  }

  /** Bias-free attention through our flash kernel even where cuDNN would run (F32 result). */
  public Tensor flashAttention(Tensor q, Tensor k, Tensor v, float scale) {
    return ops.attention().flashAttention(q, k, v, scale);
  }

  @Override
  public Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    return ops.convolution().conv3d(x, w, bias, stride, padding);
  }

  @Override
  public Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding, DType out) {
    return ops.convolution().conv3d(x, w, bias, stride, padding, out);
  }

  /** Which implementation runs {@link #conv3d} of these arguments, in words. */
  public String conv3dPath(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    return ops.convolution().conv3dPath(x, w, bias, stride, padding);
  }

  /** Every GEMM shape seen so far and how its cuBLASLt algorithm was chosen, one per line. */
  public String gemmPaths() {
    return gemm.paths();
  }

  /** Every convolution shape seen so far and what ran it (BF16 mode), one per line. */
  public String conv3dPaths() {
    return ops.convolution().conv3dPaths();
  }

  @Override
  public Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
    return ops.norms().layerNorm(x, weight, bias, eps);
  }

  @Override
  public Tensor rmsNorm(Tensor x, Tensor weight, float eps) {
    return ops.norms().rmsNorm(x, weight, eps);
  }

  @Override
  public Tensor geluTanhBackward(Tensor g, Tensor x) {
    return ops.elementwise().geluTanhBackward(g, x);
  }

  /** One row pass (dx and g·x̂), then the rows' sums by {@link #sumMiddle}. */
  @Override
  public NormGradients layerNormBackward(
      Tensor g,
      Tensor x,
      Tensor weight,
      Tensor bias,
      float eps,
      boolean wantInput,
      boolean wantWeight,
      boolean wantBias) {
    boolean weightGradient = weight != null && wantWeight;
    Tensor[] pass = ops.norms().normBackward(false, g, x, weight, eps, wantInput, weightGradient);
    return new NormGradients(
        pass[0],
        weightGradient ? rowSums(pass[1]) : null,
        bias != null && wantBias ? rowSums(tensors.f32(g)) : null);
  }

  /** As {@link #layerNormBackward}. */
  @Override
  public NormGradients rmsNormBackward(
      Tensor g, Tensor x, Tensor weight, float eps, boolean wantInput, boolean wantWeight) {
    boolean weightGradient = weight != null && wantWeight;
    Tensor[] pass = ops.norms().normBackward(true, g, x, weight, eps, wantInput, weightGradient);
    return new NormGradients(pass[0], weightGradient ? rowSums(pass[1]) : null, null);
  }

  /** A contiguous tensor summed over all its rows (its last dimension kept): {@code [n]}. */
  private Tensor rowSums(Tensor t) {
    int n = t.dim(-1);
    return sumMiddle(t.reshape(1, (int) (t.numel() / n), n)).reshape(n);
  }

  @Override
  public Tensor l2Normalize(Tensor x, int dim, float eps) {
    return ops.norms().l2Normalize(x, dim, eps);
  }

  @Override
  public Tensor channelNorm(Tensor x, Tensor gamma, float eps, boolean silu, DType out) {
    return ops.norms().channelNorm(x, gamma, eps, silu, out);
  }

  @Override
  public Tensor channelNormAfter(
      Tensor past, Tensor x, Tensor gamma, float eps, boolean silu, DType out) {
    return ops.norms().channelNormAfter(past, x, gamma, eps, silu, out);
  }

  @Override
  public Tensor softmax(Tensor x) {
    return ops.norms().softmax(x);
  }

  @Override
  public Tensor gelu(Tensor x, boolean tanhApproximation) {
    return ops.elementwise().gelu(x, tanhApproximation);
  }

  @Override
  public Tensor silu(Tensor x) {
    return ops.elementwise().silu(x);
  }

  @Override
  public Tensor unary(Tensor x, UnaryOp op) {
    return ops.elementwise().unary(x, op);
  }

  @Override
  public Tensor binary(Tensor a, Tensor b, BinaryOp op) {
    return ops.elementwise().binary(a, b, op);
  }

  @Override
  public Tensor affine(Tensor x, float scale, float shift) {
    return ops.elementwise().affine(x, scale, shift);
  }

  @Override
  public Tensor clamp(Tensor x, float min, float max) {
    return ops.elementwise().clamp(x, min, max);
  }

  @Override
  public Tensor rope(Tensor x, Tensor cos, Tensor sin) {
    return ops.elementwise().rope(x, cos, sin);
  }

  @Override
  public Tensor modulatedLayerNorm(Tensor x, Tensor shift, Tensor scale, float eps) {
    return ops.norms().modulatedLayerNorm(x, shift, scale, eps);
  }

  @Override
  public Tensor rmsNormRope(Tensor x, Tensor weight, float eps, int heads, Tensor cos, Tensor sin) {
    return ops.norms().rmsNormRope(x, weight, eps, heads, cos, sin);
  }

  @Override
  public Tensor gatedResidual(Tensor x, Tensor y, Tensor gate) {
    return ops.elementwise().gatedResidual(x, y, gate);
  }

  @Override
  public ResidualNorm residualLayerNorm(
      Tensor x, Tensor y, Tensor gate, Tensor weight, Tensor bias, float eps) {
    return ops.norms().fusesResidual(x, y)
        ? ops.norms().residualLayerNorm(x, y, gate, weight, bias, null, null, eps)
        : Backend.super.residualLayerNorm(x, y, gate, weight, bias, eps);
  }

  @Override
  public ResidualNorm residualModulatedLayerNorm(
      Tensor x, Tensor y, Tensor gate, Tensor shift, Tensor scale, float eps) {
    return ops.norms().fusesResidual(x, y)
        ? ops.norms().residualLayerNorm(x, y, gate, null, null, shift, scale, eps)
        : Backend.super.residualModulatedLayerNorm(x, y, gate, shift, scale, eps);
  }

  @Override
  public Tensor linearGeluTanh(Tensor x, Tensor w, Tensor bias) {
    return precision == Precision.BF16
        ? ops.matrix().linear(x, w, bias, true)
        : gelu(linear(x, w, bias), true);
  }

  @Override
  public Tensor concat(List<Tensor> parts, int dim) {
    return ops.movement().concat(parts, dim);
  }

  @Override
  public Tensor pad(Tensor x, int[] pads, float value) {
    return ops.movement().pad(x, pads, value);
  }

  @Override
  public Tensor upsampleNearest2d(Tensor x, int scaleH, int scaleW) {
    return ops.movement().upsampleNearest2d(x, scaleH, scaleW);
  }

  @Override
  public Tensor embedding(Tensor table, Tensor ids) {
    return ops.movement().embedding(table, ids);
  }

  @Override
  public Tensor sumLastDim(Tensor x) {
    return ops.norms().sumLastDim(x);
  }

  /**
   * A product with a row of ones (one per length, made once and kept) in the F32 GEMM — one pass
   * over x — where the default's row sum needs a transposed copy first (8.6 ms a call for a [32
   * 760, 8 960] gradient on an H100, run 31). A row first needed while a graph records is the
   * graph's own, and not kept.
   */
  @Override
  public Tensor sumMiddle(Tensor x) {
    if (x.rank() != 3) {
      throw new IllegalArgumentException("sumMiddle takes [outer, rows, inner], not " + x);
    }
    int rows = x.dim(1);
    Tensor ones = onesRows.get(rows);
    if (ones == null && allocator.capturing()) {
      ones = ones(tensors.empty(DType.F32, 1, 1, rows)); // the graph's, so not kept
    } else if (ones == null) {
      ones = onesRows.computeIfAbsent(rows, n -> ones(tensors.emptyUnscoped(DType.F32, 1, 1, n)));
    }
    return matmul(ones, x).reshape(x.dim(0), x.dim(2));
  }

  private Tensor ones(Tensor t) {
    tensors.fill(t, Float.floatToRawIntBits(1f));
    return t;
  }

  /**
   * The target's current values plus {@code value}: one packed add over a dense F32 target and
   * value of one shape (a gradient buffer's common case), else written back through the target's
   * strides by two kernels this backend already has (the broadcasting add, the strided copy).
   */
  @Override
  public void addInto(Tensor target, Tensor value) {
    requireHere(target, value, false);
    if (!ops.elementwise().addInPlace(target, value)) {
      tensors.copy(ops.elementwise().binary(target, value, BinaryOp.ADD), target);
    }
    ops.convolution().overwritten(target.storage());
  }

  /**
   * The strided copy, after an upload when the value is on the host; into a BF16 target (a LoRA's
   * factors the BF16 mode computes with) the copy rounds.
   */
  @Override
  public void copyInto(Tensor target, Tensor value) {
    requireHere(target, value, true);
    tensors.copy(tensors.onDevice(value), target);
    ops.convolution().overwritten(target.storage());
  }

  /** {@link #adamw(List, float, AdamWStep)} of one parameter. */
  @Override
  public void adamw(Tensor parameter, Tensor gradient, Tensor m, Tensor v, AdamWStep step) {
    adamw(List.of(new AdamWTensors(parameter, gradient, m, v)), 1f, step);
  }

  /**
   * A launch per 48 parameters ({@code adamw_multi_f32}, {@link
   * dev.stepweave.cuda.ops.MultiTensorOps}); a gradient on the host is uploaded first.
   */
  @Override
  public void adamw(List<AdamWTensors> all, float gradientScale, AdamWStep step) {
    List<AdamWTensors> here = new ArrayList<>(all.size());
    for (AdamWTensors t : all) {
      Backend.requireAdamWOperands(t.parameter(), t.gradient(), t.m(), t.v());
      for (Tensor x : new Tensor[] {t.parameter(), t.m(), t.v()}) {
        if (!tensors.isHere(x)) {
          throw new IllegalArgumentException("AdamW: " + x + " is not on " + device());
        }
      }
      here.add(new AdamWTensors(t.parameter(), tensors.onDevice(t.gradient()), t.m(), t.v()));
    }
    ops.multiTensor().adamw(here, gradientScale, step);
    for (AdamWTensors t : all) {
      ops.convolution().overwritten(t.parameter().storage());
    }
  }

  /** A few launches for all of them ({@link dev.stepweave.cuda.ops.MultiTensorOps}). */
  @Override
  public Tensor sumsOfSquares(List<Tensor> all) {
    if (all.isEmpty()) {
      throw new IllegalArgumentException("sums of squares of no tensors");
    }
    List<Tensor> dense = new ArrayList<>(all.size());
    for (Tensor t : all) {
      dense.add(tensors.f32(t));
    }
    Tensor out = ops.multiTensor().sumsOfSquares(dense);
    for (int i = 0; i < all.size(); i++) {
      tensors.releaseDerived(dense.get(i), all.get(i));
    }
    return out;
  }

  private void requireHere(Tensor target, Tensor value, boolean bf16Target) {
    Backend.requireInPlaceTarget(target, value, bf16Target);
    if (!tensors.isHere(target)) {
      throw new IllegalArgumentException("in place: target " + target + " is not on " + device());
    }
  }

  /** On the device: one flag comes back instead of the tensor. */
  @Override
  public boolean isFinite(Tensor t) {
    return tensors.isHere(t) ? ops.norms().isFinite(t) : Backend.isFiniteOnHost(t);
  }

  /**
   * Sticky driver errors and failed library executions are pool-fatal, allocation failures
   * out-of-memory ({@link CudaFaults}).
   */
  @Override
  public Fault classify(RuntimeException failure) {
    return CudaFaults.classify(failure);
  }

  /**
   * Frees everything this backend holds. After a sticky error (pool-fatal) the context is reset
   * instead (docs/scheduler.md, "Failures"): its device memory, modules and graphs go with it, and
   * a new backend on the device starts on a fresh context.
   */
  @Override
  public void close() {
    try {
      context.synchronize();
    } catch (CudaException e) {
      if (CudaFaults.classify(e) instanceof Fault.PoolFatal) {
        context.resetAfterFault();
        return;
      }
      throw e;
    }
    ops.close();
    graphs.clear();
    gemm.close();
    pools.close();
    allocator.releaseCached();
    context.close();
  }

  @Override
  public String toString() {
    return "CudaBackend(" + name() + ")";
  }
}
