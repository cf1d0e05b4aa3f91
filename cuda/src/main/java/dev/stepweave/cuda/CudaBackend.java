package dev.stepweave.cuda;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.DeviceMemory;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
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
  private final Device device;
  private final DeviceAllocator allocator;
  private final Kernels kernels;
  private final Gemm gemm;
  private final Ops ops;
  private final Storage gemmWorkspace;
  private final Precision precision;
  private final CudaGraphs graphs;
  private final ComponentPools pools;

  private CudaBackend(CudaContext context, Path kernelCache, Precision precision) {
    this.context = context;
    this.precision = precision;
    this.device = Device.cuda(context.device());
    this.allocator = new DeviceAllocator(device, context);
    this.pools = new ComponentPools(context, device);
    this.kernels = new Kernels(context, kernelCache);
    this.gemmWorkspace = allocator.allocate(Gemm.workspaceBytes());
    this.gemm = new Gemm(context, gemmWorkspace.segment().address());
    this.ops = new Ops(this, kernels, gemm);
    this.graphs = new CudaGraphs(this, allocator);
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
    CudaContext context = CudaContext.open(ordinal);
    return new CudaBackend(context, kernelCache, precision);
  }

  public Precision precision() {
    return precision;
  }

  public CudaContext context() {
    return context;
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

  /** Restarts {@link #peakLiveBytes} and {@link #peakReservedBytes} from the current figures. */
  public void resetPeaks() {
    allocator.resetPeaks();
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

  /** {@code component}'s pool (package-private: tests look at its chunk size and range). */
  VirtualMemoryPool componentPool(String component) {
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
    return new MemoryScope(allocator.openScope());
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
    return (body, survivors) ->
        holding.step(body, () -> survivors.get().stream().map(Tensor::storage).toList());
  }

  @Override
  public DType activationDType() {
    return precision == Precision.BF16 ? DType.BF16 : DType.F32;
  }

  /** Waits for all issued work. */
  public void synchronize() {
    context.synchronize();
  }

  @Override
  public Device device() {
    return device;
  }

  @Override
  public String name() {
    return device + " (" + context.name() + ", " + context.arch() + ")";
  }

  // ---- memory ---------------------------------------------------------------------------------

  static boolean storable(DType t) {
    return t == DType.F32 || t == DType.BF16 || t == DType.I64 || t == DType.I32;
  }

  /**
   * A fresh contiguous, uninitialised device tensor: from the caching allocator, or while a
   * component loads ({@link #loadingComponent}) from that component's pool.
   */
  Tensor empty(DType dtype, int... shape) {
    if (!storable(dtype)) {
      throw new IllegalArgumentException(
          dtype + " device storage is not supported (F32, BF16, I64, I32 are)");
    }
    long bytes = Tensor.numel(shape) * dtype.byteSize();
    Storage s = pools.isLoading() ? pools.allocate(bytes) : allocator.allocate(bytes);
    return Tensor.contiguousOver(s, dtype, shape);
  }

  /** Like {@link #empty}, but always from the caching allocator: a temporary even during a load. */
  private Tensor emptyTemporary(DType dtype, int... shape) {
    Storage s = allocator.allocate(Tensor.numel(shape) * dtype.byteSize());
    return Tensor.contiguousOver(s, dtype, shape);
  }

  /**
   * Like {@link #empty}, but no open {@link MemoryScope} releases it: a cached copy that must live
   * as long as what it was made from, returned once it is unreachable.
   */
  Tensor emptyUnscoped(DType dtype, int... shape) {
    if (!storable(dtype)) {
      throw new IllegalArgumentException(dtype + " device storage is not supported");
    }
    Storage s = allocator.allocateUnscoped(Tensor.numel(shape) * dtype.byteSize());
    return Tensor.contiguousOver(s, dtype, shape);
  }

  /**
   * Like {@link #emptyUnscoped}, for a copy that lives as long as device tensor {@code original}:
   * when {@code original} is a component's weight, the copy joins that component's pool (so it is
   * accounted with it, sleeps with it and is freed with it).
   */
  Tensor emptyBeside(Tensor original, DType dtype, int... shape) {
    if (!storable(dtype)) {
      throw new IllegalArgumentException(dtype + " device storage is not supported");
    }
    long bytes = Tensor.numel(shape) * dtype.byteSize();
    Storage s = pools.allocateBeside(original.storage().segment().address(), bytes);
    return s == null ? emptyUnscoped(dtype, shape) : Tensor.contiguousOver(s, dtype, shape);
  }

  /**
   * Releases {@code derived}, a temporary an op made from {@code original} (a conversion or an
   * upload), once the kernels reading it are issued; nothing when it is {@code original} itself.
   */
  void releaseDerived(Tensor derived, Tensor original) {
    if (derived != null && derived.storage() != original.storage()) {
      allocator.release(derived.storage());
    }
  }

  @Override
  public Tensor zeros(DType dtype, int... shape) {
    Tensor t = empty(dtype, shape);
    fill(t, 0);
    return t;
  }

  /** Sets every 4-byte word of contiguous {@code t} to {@code bits}. */
  void fill(Tensor t, int bits) {
    if (t.byteSize() % 4 != 0) {
      throw new IllegalArgumentException("fill of " + t + ": size not a multiple of 4 bytes");
    }
    long ptr = address(t);
    long words = t.byteSize() / 4;
    long stream = context.stream();
    Driver.call(
        "cuMemsetD32Async",
        () -> (int) Driver.cuMemsetD32Async.invokeExact(ptr, bits, words, stream));
  }

  @Override
  public Tensor upload(Tensor t, DType dtype) {
    if (isHere(t)) {
      return convert(t, dtype);
    }
    if (t.device().kind() != Device.Kind.CPU) {
      throw new IllegalArgumentException("cannot upload " + t + " to " + device);
    }
    context.refuseDuringCapture("an upload of " + t);
    Tensor host = t;
    boolean deviceConvertible = storable(t.dtype()) && t.dtype().isFloating() == dtype.isFloating();
    if (!deviceConvertible) {
      host = t.toHost(dtype);
    } else if (!t.isContiguous()) {
      host = t.toHost(t.dtype());
    }
    // A copy that is converted on the device is staged in a temporary, never in a weight pool.
    boolean converts = host.dtype() != dtype;
    Tensor raw =
        converts ? emptyTemporary(host.dtype(), host.shape()) : empty(host.dtype(), host.shape());
    if (raw.byteSize() > 0) {
      MemorySegment src = host.segment();
      long dst = address(raw);
      long bytes = raw.byteSize();
      Driver.call(
          "cuMemcpyHtoD_v2", () -> (int) Driver.cuMemcpyHtoD_v2.invokeExact(dst, src, bytes));
    }
    if (!converts) {
      return raw;
    }
    Tensor out = convert(raw, dtype);
    releaseDerived(raw, out);
    return out;
  }

  @Override
  public Tensor download(Tensor t) {
    if (!isHere(t)) {
      return t.toHost(DType.F32);
    }
    if (!t.dtype().isFloating()) {
      return downloadRaw(t).toHost(DType.F32);
    }
    return downloadRaw(convert(t, DType.F32));
  }

  /**
   * Scans {@code t} on the device and copies back one flag (4 bytes) instead of the tensor: the
   * engine checks every step's output of every request this way.
   */
  @Override
  public boolean isFinite(Tensor t) {
    if (!isHere(t)) {
      return Backend.isFiniteOnHost(t);
    }
    if (!t.dtype().isFloating() || t.numel() == 0) {
      return true;
    }
    Tensor x = t.dtype() == DType.F32 || t.dtype() == DType.BF16 ? t : convert(t, DType.F32);
    Tensor dense = contiguous(x);
    Tensor flag = zeros(DType.F32, 1);
    try (Launch l = kernels.launch("misc.cu", "any_nonfinite_" + code(dense.dtype()))) {
      l.ptr(address(dense)).i64(dense.numel()).ptr(address(flag));
      kernels.elementwise(l, dense.numel());
    }
    boolean finite = downloadRaw(flag).getFloat(0) == 0f;
    allocator.release(flag.storage());
    releaseDerived(dense, x);
    releaseDerived(x, t);
    return finite;
  }

  /** The elements of {@code t} in its own dtype as a contiguous host tensor. */
  Tensor downloadRaw(Tensor t) {
    context.refuseDuringCapture("a download of " + t);
    context.bind();
    Tensor dense = contiguous(t);
    Tensor host = Tensor.zeros(dense.dtype(), dense.shape());
    if (host.byteSize() > 0) {
      MemorySegment dst = host.segment();
      long src = address(dense);
      long bytes = host.byteSize();
      Driver.call(
          "cuMemcpyDtoH_v2", () -> (int) Driver.cuMemcpyDtoH_v2.invokeExact(dst, src, bytes));
    }
    return host;
  }

  @Override
  public Tensor contiguous(Tensor t) {
    Tensor here = onDevice(t);
    return here.isContiguous() ? here : convert(here, here.dtype());
  }

  /** A fresh contiguous copy of device tensor {@code t} in {@code dtype}. */
  Tensor convert(Tensor t, DType dtype) {
    Tensor out = empty(dtype, t.shape());
    copy(t, out);
    return out;
  }

  /** Copies every element of device view {@code src} into device view {@code dst} (same shape). */
  void copy(Tensor src, Tensor dst) {
    long n = src.numel();
    if (n == 0) {
      return;
    }
    String kernel = "copy_" + code(src.dtype()) + "_" + code(dst.dtype());
    if (src.dtype().isFloating() != dst.dtype().isFloating()) {
      throw new IllegalArgumentException("no device conversion from " + src + " to " + dst);
    }
    try (Launch l = kernels.launch("copy.cu", kernel)) {
      l.ptr(address(src))
          .ptr(address(dst))
          .struct(Index8.of(l.arena(), src.shape(), src.strides(), dst.strides()))
          .i64(n);
      kernels.elementwise(l, n);
    }
  }

  static String code(DType t) {
    return switch (t) {
      case F32 -> "f32";
      case BF16 -> "bf16";
      case I64 -> "i64";
      case I32 -> "i32";
      default -> throw new IllegalArgumentException(t + " device storage is not supported");
    };
  }

  boolean isHere(Tensor t) {
    return t.device().equals(device);
  }

  /** {@code t} itself when on this device; a host tensor is uploaded in a storable dtype. */
  Tensor onDevice(Tensor t) {
    if (isHere(t)) {
      return t;
    }
    DType keep = storable(t.dtype()) ? t.dtype() : DType.F32;
    return upload(t, keep);
  }

  /** {@code t} as contiguous F32 on this device (itself when it already is). */
  Tensor f32(Tensor t) {
    Tensor here = onDevice(t);
    return here.dtype() == DType.F32 && here.isContiguous() ? here : convert(here, DType.F32);
  }

  /** {@code t} as F32 on this device, any strides (a view of it when it already is F32). */
  Tensor f32View(Tensor t) {
    Tensor here = onDevice(t);
    return here.dtype() == DType.F32 ? here : convert(here, DType.F32);
  }

  /** Device address of the first element of view {@code t}. */
  static long address(Tensor t) {
    return t.storage().segment().address() + t.offset() * t.dtype().byteSize();
  }

  // ---- compute (see Ops) -----------------------------------------------------------------------

  @Override
  public Tensor linear(Tensor x, Tensor w, Tensor bias) {
    return ops.linear(x, w, bias, false);
  }

  @Override
  public Tensor matmul(Tensor a, Tensor b) {
    return ops.matmul(a, b);
  }

  @Override
  public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor bias, float scale) {
    return ops.attention(q, k, v, bias, scale);
  }

  /** Which implementation runs bias-free {@link #attention} of these inputs, in words. */
  String attentionPath(Tensor q, Tensor k, Tensor v) {
    return ops.attentionPath(q, k, v);
  }

  /** Bias-free attention through our flash kernel even where cuDNN would run (F32 result). */
  Tensor flashAttention(Tensor q, Tensor k, Tensor v, float scale) {
    return ops.flashAttention(q, k, v, scale);
  }

  @Override
  public Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    return ops.conv3d(x, w, bias, stride, padding);
  }

  /** Which implementation runs {@link #conv3d} of these arguments, in words. */
  String conv3dPath(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    return ops.conv3dPath(x, w, bias, stride, padding);
  }

  /** Every convolution shape seen so far and what ran it (BF16 mode), one per line. */
  String conv3dPaths() {
    return ops.conv3dPaths();
  }

  @Override
  public Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
    return ops.layerNorm(x, weight, bias, eps);
  }

  @Override
  public Tensor rmsNorm(Tensor x, Tensor weight, float eps) {
    return ops.rmsNorm(x, weight, eps);
  }

  @Override
  public Tensor l2Normalize(Tensor x, int dim, float eps) {
    return ops.l2Normalize(x, dim, eps);
  }

  @Override
  public Tensor softmax(Tensor x) {
    return ops.softmax(x);
  }

  @Override
  public Tensor gelu(Tensor x, boolean tanhApproximation) {
    return ops.map(x, tanhApproximation ? Ops.GELU_TANH : Ops.GELU_ERF, 0, 0);
  }

  @Override
  public Tensor silu(Tensor x) {
    return ops.map(x, Ops.SILU, 0, 0);
  }

  @Override
  public Tensor unary(Tensor x, UnaryOp op) {
    return ops.map(x, op.ordinal(), 0, 0);
  }

  @Override
  public Tensor binary(Tensor a, Tensor b, BinaryOp op) {
    return ops.binary(a, b, op);
  }

  @Override
  public Tensor affine(Tensor x, float scale, float shift) {
    return ops.map(x, Ops.AFFINE, scale, shift);
  }

  @Override
  public Tensor clamp(Tensor x, float min, float max) {
    return ops.map(x, Ops.CLAMP, min, max);
  }

  @Override
  public Tensor rope(Tensor x, Tensor cos, Tensor sin) {
    return ops.rope(x, cos, sin);
  }

  @Override
  public Tensor modulatedLayerNorm(Tensor x, Tensor shift, Tensor scale, float eps) {
    return ops.modulatedLayerNorm(x, shift, scale, eps);
  }

  @Override
  public Tensor rmsNormRope(Tensor x, Tensor weight, float eps, int heads, Tensor cos, Tensor sin) {
    return ops.rmsNormRope(x, weight, eps, heads, cos, sin);
  }

  @Override
  public Tensor gatedResidual(Tensor x, Tensor y, Tensor gate) {
    return ops.gatedResidual(x, y, gate);
  }

  @Override
  public Tensor linearGeluTanh(Tensor x, Tensor w, Tensor bias) {
    return precision == Precision.BF16
        ? ops.linear(x, w, bias, true)
        : gelu(linear(x, w, bias), true);
  }

  @Override
  public Tensor concat(List<Tensor> parts, int dim) {
    return ops.concat(parts, dim);
  }

  @Override
  public Tensor pad(Tensor x, int[] pads, float value) {
    return ops.pad(x, pads, value);
  }

  @Override
  public Tensor upsampleNearest2d(Tensor x, int scaleH, int scaleW) {
    return ops.upsampleNearest2d(x, scaleH, scaleW);
  }

  @Override
  public Tensor embedding(Tensor table, Tensor ids) {
    return ops.embedding(table, ids);
  }

  @Override
  public Tensor sumLastDim(Tensor x) {
    return ops.sumLastDim(x);
  }

  @Override
  public void close() {
    context.synchronize();
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
