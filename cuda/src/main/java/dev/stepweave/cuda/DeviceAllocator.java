package dev.stepweave.cuda;

import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Storage;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Cleaner;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A caching allocator for activations. A tensor's block comes back in one of two ways: explicitly
 * ({@link #release}, or a {@link Scope} ending) as soon as the caller knows it is dead, or through
 * a {@link Cleaner} when its storage becomes unreachable and the garbage collector notices. Either
 * way the block is reused for the next request of the same size class. Reuse without
 * synchronisation is safe because all work runs on one stream in issue order: any kernel still
 * reading the old tensor runs before the new owner's. Blocks are returned to the driver only when
 * an allocation fails, after a garbage collection.
 */
final class DeviceAllocator {
  private static final Cleaner CLEANER = Cleaner.create();
  private static final long SMALL = 1 << 20;
  private static final long LARGE_ROUNDING = 2 << 20;
  private static final long SMALL_ROUNDING = 512;

  /** One device block; {@code returned} makes the explicit and the cleaner's return exclusive. */
  private static final class Block {
    final long ptr;
    final long size;
    final AtomicBoolean returned = new AtomicBoolean();

    Block(long ptr, long size) {
      this.ptr = ptr;
      this.size = size;
    }
  }

  /**
   * The blocks allocated while it is open. {@link #releaseExcept} gives all of them back but the
   * kept ones, which stay in the scope (so the next call may release them); closing releases what
   * is left. One scope may be open at a time.
   */
  final class Scope implements AutoCloseable {
    private List<Block> blocks = new ArrayList<>();

    /** Releases every block of this scope not under one of {@code keep}'s storages. */
    void releaseExcept(List<Storage> keep) {
      List<Block> kept = new ArrayList<>();
      for (Block b : blocks) {
        if (keep.stream().anyMatch(s -> s.segment().address() == b.ptr)) {
          kept.add(b);
        } else {
          giveBack(b);
        }
      }
      blocks = kept;
    }

    @Override
    public void close() {
      if (scope != this) {
        throw new IllegalStateException("closing a scope that is not the open one");
      }
      scope = null;
    }
  }

  private final Device device;
  private final CudaContext context;
  private final Map<Long, ArrayDeque<Long>> cached = new HashMap<>();
  private final Map<Long, Block> live = new HashMap<>();
  // Filled by the cleaner thread, drained by the allocating thread (which holds the context).
  private final ConcurrentLinkedQueue<Block> returned = new ConcurrentLinkedQueue<>();
  private Scope scope;
  private long reservedBytes;
  private long peakReservedBytes;
  private long liveBytes;
  private long peakLiveBytes;

  DeviceAllocator(Device device, CudaContext context) {
    this.device = device;
    this.context = context;
  }

  /** A block of at least {@code bytes} wrapped as storage, recycled when unreachable. */
  Storage allocate(long bytes) {
    return allocate(bytes, true);
  }

  /**
   * Like {@link #allocate} but never collected by the open scope: for caches whose entries outlive
   * the scope they are made in, and come back only through the cleaner.
   */
  Storage allocateUnscoped(long bytes) {
    return allocate(bytes, false);
  }

  private Storage allocate(long bytes, boolean scoped) {
    context.bind();
    long size = sizeClass(Math.max(bytes, 1));
    Block block = new Block(take(size), size);
    liveBytes += size;
    peakLiveBytes = Math.max(peakLiveBytes, liveBytes);
    live.put(block.ptr, block);
    if (scoped && scope != null) {
      scope.blocks.add(block);
    }
    Storage storage = new Storage(MemorySegment.ofAddress(block.ptr).reinterpret(bytes), device);
    CLEANER.register(
        storage,
        () -> {
          if (block.returned.compareAndSet(false, true)) {
            returned.add(block);
          }
        });
    return storage;
  }

  /**
   * Gives {@code storage}'s block back now: the caller promises that nothing issued later reads it.
   * Storage this allocator did not hand out (or already took back) is ignored.
   */
  void release(Storage storage) {
    Block b = live.get(storage.segment().address());
    if (b != null) {
      giveBack(b);
    }
  }

  /** Opens a scope that collects the blocks allocated until it closes. */
  Scope openScope() {
    if (scope != null) {
      throw new IllegalStateException("a device memory scope is already open");
    }
    scope = new Scope();
    return scope;
  }

  private void giveBack(Block b) {
    if (b.returned.compareAndSet(false, true)) {
      recycle(b);
    }
  }

  private void recycle(Block b) {
    live.remove(b.ptr, b);
    liveBytes -= b.size;
    cached.computeIfAbsent(b.size, k -> new ArrayDeque<>()).push(b.ptr);
  }

  static long sizeClass(long bytes) {
    long unit = bytes < SMALL ? SMALL_ROUNDING : LARGE_ROUNDING;
    return (bytes + unit - 1) / unit * unit;
  }

  private long take(long size) {
    drainReturned();
    ArrayDeque<Long> free = cached.get(size);
    if (free != null && !free.isEmpty()) {
      return free.pop();
    }
    try {
      return fresh(size);
    } catch (CudaException e) {
      if (e.status() != Driver.CUDA_ERROR_OUT_OF_MEMORY) {
        throw e;
      }
      // Device memory is invisible to the Java heap's sizing: collect so unreachable tensors
      // come back, give every cached block to the driver, and try once more.
      System.gc();
      sleepBriefly();
      drainReturned();
      ArrayDeque<Long> again = cached.get(size);
      if (again != null && !again.isEmpty()) {
        return again.pop();
      }
      releaseCached();
      return fresh(size);
    }
  }

  private long fresh(long size) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      Driver.call("cuMemAlloc_v2", () -> (int) Driver.cuMemAlloc_v2.invokeExact(out, size));
      reservedBytes += size;
      peakReservedBytes = Math.max(peakReservedBytes, reservedBytes);
      return out.get(ValueLayout.JAVA_LONG, 0);
    }
  }

  private void drainReturned() {
    Block block;
    while ((block = returned.poll()) != null) {
      recycle(block);
    }
  }

  /** Gives every cached (unused) block back to the driver. */
  void releaseCached() {
    drainReturned();
    context.synchronize();
    for (Map.Entry<Long, ArrayDeque<Long>> e : cached.entrySet()) {
      for (long ptr : e.getValue()) {
        Driver.call("cuMemFree_v2", () -> (int) Driver.cuMemFree_v2.invokeExact(ptr));
        reservedBytes -= e.getKey();
      }
    }
    cached.clear();
  }

  private static void sleepBriefly() {
    try {
      Thread.sleep(50);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Bytes held from the driver (live tensors plus the cache). */
  long reservedBytes() {
    return reservedBytes;
  }

  /** Bytes of tensors not yet known to be unreachable. */
  long liveBytes() {
    drainReturned();
    return liveBytes;
  }

  /** Restarts the high-water marks from the current figures. */
  void resetPeaks() {
    drainReturned();
    peakLiveBytes = liveBytes;
    peakReservedBytes = reservedBytes;
  }

  /** The most bytes ever held from the driver at once. */
  long peakReservedBytes() {
    return peakReservedBytes;
  }

  /** The most bytes ever live at once. */
  long peakLiveBytes() {
    return peakLiveBytes;
  }
}
