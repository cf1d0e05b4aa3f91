package dev.stepweave.cuda.memory;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.cuda.kernels.Expansion;
import dev.stepweave.cuda.kernels.Index8;
import dev.stepweave.cuda.kernels.Kernels;
import dev.stepweave.cuda.kernels.Launch;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;

/**
 * The device tensors of one backend: where a new one's memory comes from (the caching allocator, or
 * a component's pool while it loads), and the copies every op builds on — between views and dtypes
 * on the device, and to and from the host. Storage dtypes are F32, BF16, I64 and I32.
 *
 * <p>The copies to and from the host may be called from any thread (a caller reading a request's
 * results while the engine's thread works on): each runs {@link CudaContext#exclusively}, so none
 * lands inside a graph another thread records; the {@code …Locked} methods are their bodies.
 */
public final class DeviceTensors {
  private final CudaContext context;
  private final Device device;
  private final DeviceAllocator allocator;
  private final ComponentPools pools;
  private final Kernels kernels;
  private final PinnedHostBuffers pinned;
  private final QueuedDownloads queued;

  public DeviceTensors(
      CudaContext context, DeviceAllocator allocator, ComponentPools pools, Kernels kernels) {
    this.context = context;
    this.device = Device.cuda(context.device());
    this.allocator = allocator;
    this.pools = pools;
    this.kernels = kernels;
    this.pinned = new PinnedHostBuffers(context);
    this.queued = new QueuedDownloads(context, pinned);
  }

  public CudaContext context() {
    return context;
  }

  public Device device() {
    return device;
  }

  public Kernels kernels() {
    return kernels;
  }

  public static boolean storable(DType t) {
    return t == DType.F32 || t == DType.BF16 || t == DType.I64 || t == DType.I32;
  }

  /**
   * A fresh contiguous, uninitialised device tensor: from the caching allocator, or while a
   * component loads ({@link ComponentPools#loading}) from that component's pool.
   */
  public Tensor empty(DType dtype, int... shape) {
    if (!storable(dtype)) {
      throw new IllegalArgumentException(
          dtype + " device storage is not supported (F32, BF16, I64, I32 are)");
    }
    long bytes = Tensor.numel(shape) * dtype.byteSize();
    Storage s = pools.allocateWhileLoading(bytes);
    if (s == null) {
      s = allocator.allocate(bytes);
    }
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
  public Tensor emptyUnscoped(DType dtype, int... shape) {
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
  public Tensor emptyBeside(Tensor original, DType dtype, int... shape) {
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
  public void releaseDerived(Tensor derived, Tensor original) {
    if (derived != null && derived.storage() != original.storage()) {
      allocator.release(derived.storage());
    }
  }

  /**
   * Hands back {@code temporary}, a tensor an op made for itself, once the kernels reading it are
   * issued (stream order makes the reuse safe).
   */
  public void release(Tensor temporary) {
    allocator.release(temporary.storage());
  }

  public Tensor zeros(DType dtype, int... shape) {
    Tensor t = empty(dtype, shape);
    fill(t, 0);
    return t;
  }

  /** Sets every 4-byte word of contiguous {@code t} to {@code bits}. */
  public void fill(Tensor t, int bits) {
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

  public Tensor upload(Tensor t, DType dtype) {
    return context.exclusively(() -> uploadLocked(t, dtype));
  }

  private Tensor uploadLocked(Tensor t, DType dtype) {
    if (isHere(t)) {
      return convert(t, dtype);
    }
    Tensor out = empty(dtype, t.shape());
    uploadInto(t, out);
    return out;
  }

  /**
   * Tensors of one shape copied onto the device stacked along a new first dimension, {@code [G,
   * ...]}, each straight into its slice: during a load the stack is one allocation of the weight
   * pool, with no separate copy of each part left behind.
   */
  public Tensor uploadStacked(List<Tensor> parts, DType dtype) {
    return context.exclusively(() -> uploadStackedLocked(parts, dtype));
  }

  private Tensor uploadStackedLocked(List<Tensor> parts, DType dtype) {
    int[] shape = parts.getFirst().shape();
    Tensor out = empty(dtype, OpShapes.stacked(parts.size(), shape));
    for (int i = 0; i < parts.size(); i++) {
      Tensor part = parts.get(i);
      if (!Arrays.equals(part.shape(), shape)) {
        throw new IllegalArgumentException(
            "stacked tensors must have one shape: " + part + " after " + parts.getFirst());
      }
      if (isHere(part)) {
        copy(onDevice(part), out.select(0, i));
      } else {
        uploadInto(part, out.select(0, i));
      }
    }
    return out;
  }

  /** Copies host tensor {@code t} into the dense device view {@code dst}, as dst's dtype. */
  private void uploadInto(Tensor t, Tensor dst) {
    if (t.device().kind() != Device.Kind.CPU) {
      throw new IllegalArgumentException("cannot upload " + t + " to " + device);
    }
    context.refuseDuringCapture("an upload of " + t);
    DType dtype = dst.dtype();
    Tensor host = t;
    boolean deviceConvertible = storable(t.dtype()) && t.dtype().isFloating() == dtype.isFloating();
    if (!deviceConvertible) {
      host = t.toHost(dtype);
    } else if (!t.isContiguous()) {
      host = t.toHost(t.dtype());
    }
    if (dst.byteSize() == 0) {
      return;
    }
    if (host.dtype() == dtype) {
      copyToDevice(host.segment(), address(dst), dst.byteSize());
      return;
    }
    // A copy that is converted on the device is staged in a temporary, never in a weight pool.
    Tensor raw = emptyTemporary(host.dtype(), host.shape());
    copyToDevice(host.segment(), address(raw), raw.byteSize());
    copy(raw, dst);
    release(raw);
  }

  /** A copy this small goes straight from its (pageable) memory; bigger ones are staged. */
  private static final long STAGED_FROM = 4L << 20;

  /** The page-locked staging buffer's size: one chunk of a big upload. */
  private static final long STAGE_BYTES = 64L << 20;

  /** Slices of a chunk that host threads copy into the staging buffer side by side. */
  private static final long SLICE_BYTES = 8L << 20;

  private MemorySegment stage;

  /**
   * Copies {@code bytes} from host memory to device address {@code dst}, returning when done. A
   * copy from pageable memory (a mapped weight file) runs at a few GB/s, the driver staging it
   * through small buffers on one thread; a big one is instead staged here, chunk by chunk, through
   * a page-locked buffer that host threads fill in parallel, each chunk then copied at the link's
   * speed. (A copy from page-locked memory is synchronous with the host, so the buffer is free
   * again when it returns.)
   */
  private synchronized void copyToDevice(MemorySegment src, long dst, long bytes) {
    MemorySegment buffer = stage(bytes);
    if (buffer == null) {
      Driver.call(
          "cuMemcpyHtoD_v2", () -> (int) Driver.cuMemcpyHtoD_v2.invokeExact(dst, src, bytes));
      return;
    }
    for (long at = 0; at < bytes; at += STAGE_BYTES) {
      long chunk = Math.min(STAGE_BYTES, bytes - at);
      parallelCopy(src, at, buffer, 0, chunk);
      long to = dst + at;
      Driver.call(
          "cuMemcpyHtoD_v2", () -> (int) Driver.cuMemcpyHtoD_v2.invokeExact(to, buffer, chunk));
    }
  }

  /** {@link #copyToDevice}'s mirror: device address {@code src} to host memory, staged if big. */
  private synchronized void copyToHost(long src, MemorySegment dst, long bytes) {
    MemorySegment buffer = stage(bytes);
    if (buffer == null) {
      Driver.call(
          "cuMemcpyDtoH_v2", () -> (int) Driver.cuMemcpyDtoH_v2.invokeExact(dst, src, bytes));
      return;
    }
    for (long at = 0; at < bytes; at += STAGE_BYTES) {
      long chunk = Math.min(STAGE_BYTES, bytes - at);
      long from = src + at;
      Driver.call(
          "cuMemcpyDtoH_v2", () -> (int) Driver.cuMemcpyDtoH_v2.invokeExact(buffer, from, chunk));
      parallelCopy(buffer, 0, dst, at, chunk);
    }
  }

  /** The staging buffer for a copy of {@code bytes}, or null to copy directly. */
  private MemorySegment stage(long bytes) {
    if (bytes < STAGED_FROM) {
      return null;
    }
    if (stage == null) {
      stage = pinned.borrow(STAGE_BYTES); // kept for the backend's life
    }
    return stage;
  }

  /** Host memory copied by several threads, {@link #SLICE_BYTES} each. */
  private static void parallelCopy(
      MemorySegment src, long srcAt, MemorySegment dst, long dstAt, long bytes) {
    int slices = (int) ((bytes + SLICE_BYTES - 1) / SLICE_BYTES);
    java.util.stream.IntStream.range(0, slices)
        .parallel()
        .forEach(
            i -> {
              long offset = i * SLICE_BYTES;
              long length = Math.min(SLICE_BYTES, bytes - offset);
              MemorySegment.copy(src, srcAt + offset, dst, dstAt + offset, length);
            });
  }

  public Tensor download(Tensor t) {
    return context.exclusively(() -> downloadLocked(t));
  }

  private Tensor downloadLocked(Tensor t) {
    if (!isHere(t)) {
      return t.toHost(DType.F32);
    }
    if (!t.dtype().isFloating()) {
      return downloadRaw(t).toHost(DType.F32);
    }
    return downloadRaw(convert(t, DType.F32));
  }

  /**
   * {@code t} as F32 into {@code into}, a contiguous F32 host tensor of its shape (see {@code
   * Backend.downloadInto}).
   */
  public void downloadInto(Tensor t, Tensor into) {
    Backend.requireDownloadTarget(t, into);
    if (!isHere(t)) {
      MemorySegment.copy(t.toHost(DType.F32).segment(), 0, into.segment(), 0, into.byteSize());
      return;
    }
    context.exclusively(
        () -> {
          context.refuseDuringCapture("a download of " + t);
          context.bind();
          Tensor dense = convert(t, DType.F32); // a fresh contiguous copy, released once read
          if (into.byteSize() > 0) {
            copyToHost(address(dense), into.segment(), into.byteSize());
          }
          release(dense);
          return null;
        });
  }

  /** The elements of {@code t} in its own dtype as a contiguous host tensor. */
  public Tensor downloadRaw(Tensor t) {
    return context.exclusively(() -> downloadRawLocked(t));
  }

  private Tensor downloadRawLocked(Tensor t) {
    context.refuseDuringCapture("a download of " + t);
    context.bind();
    Tensor dense = contiguous(t);
    Tensor host = Tensor.zeros(dense.dtype(), dense.shape());
    if (host.byteSize() > 0) {
      copyToHost(address(dense), host.segment(), host.byteSize());
    }
    return host;
  }

  /**
   * {@code t}'s elements in its own dtype as a contiguous host tensor, copied on the stream behind
   * the work queued so far and landed by {@link QueuedDownloads}: readable after the next {@link
   * #awaitDownloads}. The source's memory is safe meanwhile: the allocator reuses a freed block
   * only for work queued later on the same stream, and gives blocks back to the driver only after a
   * synchronisation.
   */
  public Supplier<Tensor> downloadQueued(Tensor t) {
    return context.exclusively(() -> downloadQueuedLocked(t));
  }

  private Supplier<Tensor> downloadQueuedLocked(Tensor t) {
    if (!isHere(t)) {
      Tensor host = t.toHost(t.dtype());
      return () -> host;
    }
    context.refuseDuringCapture("a download of " + t);
    context.bind();
    Tensor dense = contiguous(t);
    long bytes = dense.byteSize();
    if (bytes == 0) {
      Tensor empty = Tensor.zeros(dense.dtype(), dense.shape());
      return () -> empty;
    }
    return queued.queue(address(dense), dense.dtype(), dense.shape(), bytes);
  }

  /**
   * {@code t} as F32 into {@code into}'s contiguous F32 host tensor of its shape, copied on the
   * stream like {@link #downloadQueued} (see {@code Backend.downloadQueuedInto}).
   */
  public Supplier<Tensor> downloadQueuedInto(Tensor t, Supplier<Tensor> into) {
    if (!isHere(t)) {
      Tensor target = into.get();
      downloadInto(t, target);
      return () -> target;
    }
    return context.exclusively(
        () -> {
          context.refuseDuringCapture("a download of " + t);
          context.bind();
          Tensor dense = t.dtype() == DType.F32 && t.isContiguous() ? t : convert(t, DType.F32);
          Supplier<Tensor> landed =
              queued.queue(
                  address(dense),
                  dense.byteSize(),
                  () -> {
                    Tensor target = into.get();
                    Backend.requireDownloadTarget(t, target);
                    return target;
                  });
          releaseDerived(dense, t); // the copy is queued: stream order keeps the block until then
          return landed;
        });
  }

  /**
   * Returns once every {@link #downloadQueued} copy so far has landed (after the stream's work).
   */
  public void awaitDownloads() {
    queued.awaitAll();
  }

  public Tensor contiguous(Tensor t) {
    Tensor here = onDevice(t);
    return here.isContiguous() ? here : convert(here, here.dtype());
  }

  /** A fresh contiguous copy of device tensor {@code t} in {@code dtype}. */
  public Tensor convert(Tensor t, DType dtype) {
    Tensor out = empty(dtype, t.shape());
    copy(t, out);
    return out;
  }

  /** Copies every element of device view {@code src} into device view {@code dst} (same shape). */
  public void copy(Tensor src, Tensor dst) {
    long n = src.numel();
    if (n == 0) {
      return;
    }
    String types = code(src.dtype()) + "_" + code(dst.dtype());
    if (src.dtype().isFloating() != dst.dtype().isFloating()) {
      throw new IllegalArgumentException("no device conversion from " + src + " to " + dst);
    }
    Expansion expanded =
        src.dtype().isFloating() ? Expansion.of(src.shape(), src.strides(), dst.strides()) : null;
    if (expanded != null) {
      try (Launch l = kernels.launch("copy.cu", "copy_expanded_" + types)) {
        l.ptr(address(src)).ptr(address(dst));
        l.struct(expanded.own(l.arena())).struct(expanded.replicaOffsets(l.arena()));
        l.i64(expanded.values()).i32(expanded.replicas());
        kernels.elementwise(l, expanded.values());
      }
      return;
    }
    try (Launch l = kernels.launch("copy.cu", "copy_" + types)) {
      l.ptr(address(src))
          .ptr(address(dst))
          .struct(Index8.of(l.arena(), src.shape(), src.strides(), dst.strides()))
          .i64(n);
      kernels.elementwise(l, n);
    }
  }

  public static String code(DType t) {
    return switch (t) {
      case F32 -> "f32";
      case BF16 -> "bf16";
      case I64 -> "i64";
      case I32 -> "i32";
      default -> throw new IllegalArgumentException(t + " device storage is not supported");
    };
  }

  public boolean isHere(Tensor t) {
    return t.device().equals(device);
  }

  /** {@code t} itself when on this device; a host tensor is uploaded in a storable dtype. */
  public Tensor onDevice(Tensor t) {
    if (isHere(t)) {
      return t;
    }
    DType keep = storable(t.dtype()) ? t.dtype() : DType.F32;
    return upload(t, keep);
  }

  /** {@code t} as contiguous F32 on this device (itself when it already is). */
  public Tensor f32(Tensor t) {
    Tensor here = onDevice(t);
    return here.dtype() == DType.F32 && here.isContiguous() ? here : convert(here, DType.F32);
  }

  /** {@code t} as F32 on this device, any strides (a view of it when it already is F32). */
  public Tensor f32View(Tensor t) {
    Tensor here = onDevice(t);
    return here.dtype() == DType.F32 ? here : convert(here, DType.F32);
  }

  /** Device address of the first element of view {@code t}. */
  public static long address(Tensor t) {
    return t.storage().segment().address() + t.offset() * t.dtype().byteSize();
  }
}
