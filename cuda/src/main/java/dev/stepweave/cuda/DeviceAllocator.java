package dev.stepweave.cuda;

import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Storage;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Cleaner;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A caching allocator for activations. Tensors are freed by the garbage collector: a {@link
 * Cleaner} hands an unreachable storage's block back, and the block is reused for the next request
 * of the same size class. Reuse without synchronisation is safe because all work runs on one stream
 * in issue order: any kernel still reading the old tensor runs before the new owner's. Blocks are
 * returned to the driver only when an allocation fails, after a garbage collection.
 */
final class DeviceAllocator {
  private static final Cleaner CLEANER = Cleaner.create();
  private static final long SMALL = 1 << 20;
  private static final long LARGE_ROUNDING = 2 << 20;
  private static final long SMALL_ROUNDING = 512;

  private final Device device;
  private final CudaContext context;
  private final Map<Long, ArrayDeque<Long>> cached = new HashMap<>();
  // Filled by the cleaner thread, drained by the allocating thread (which holds the context).
  private final ConcurrentLinkedQueue<long[]> returned = new ConcurrentLinkedQueue<>();
  private long reservedBytes;
  private long liveBytes;
  private long peakLiveBytes;

  DeviceAllocator(Device device, CudaContext context) {
    this.device = device;
    this.context = context;
  }

  /** A block of at least {@code bytes} wrapped as storage, recycled when unreachable. */
  Storage allocate(long bytes) {
    context.bind();
    long size = sizeClass(Math.max(bytes, 1));
    long ptr = take(size);
    liveBytes += size;
    peakLiveBytes = Math.max(peakLiveBytes, liveBytes);
    Storage storage = new Storage(MemorySegment.ofAddress(ptr).reinterpret(bytes), device);
    long[] block = {ptr, size};
    CLEANER.register(storage, () -> returned.add(block));
    return storage;
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
      return out.get(ValueLayout.JAVA_LONG, 0);
    }
  }

  private void drainReturned() {
    long[] block;
    while ((block = returned.poll()) != null) {
      liveBytes -= block[1];
      cached.computeIfAbsent(block[1], k -> new ArrayDeque<>()).push(block[0]);
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

  /** The most bytes ever live at once. */
  long peakLiveBytes() {
    return peakLiveBytes;
  }
}
