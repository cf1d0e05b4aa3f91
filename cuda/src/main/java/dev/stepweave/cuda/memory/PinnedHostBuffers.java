package dev.stepweave.cuda.memory;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.cuda.driver.Ffm;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * Page-locked host buffers that stage copies between host and device: a copy through pageable
 * memory makes the driver stage it through small buffers and wait, a copy through one of these runs
 * at the link's speed, and a device→host one runs on the stream while the host goes on.
 *
 * <p>Buffers are lent and given back explicitly and never leave the backend (what a caller gets is
 * ordinary memory the staging copied into), so page-locked memory is never held by a tensor the
 * garbage collector has yet to find. They come in size classes (powers of two up to 2 MiB, then
 * multiples of 2 MiB) so equal copies reuse each other's; free buffers beyond {@link #KEEP_BYTES}
 * go back to the driver. Thread-safe.
 */
public final class PinnedHostBuffers {
  /** Free page-locked memory kept for reuse; more is released (page-locked memory is scarce). */
  static final long KEEP_BYTES = 512L << 20;

  private static final long MIB2 = 2L << 20;

  private final CudaContext context;
  private final Map<Long, ArrayDeque<MemorySegment>> free = new HashMap<>();
  private long freeBytes;

  public PinnedHostBuffers(CudaContext context) {
    this.context = context;
  }

  /**
   * A page-locked buffer of at least {@code bytes} (its size is its class's), or null when the
   * driver refuses one; give it back with {@link #giveBack}.
   */
  public MemorySegment borrow(long bytes) {
    long size = sizeClass(Math.max(bytes, 1));
    synchronized (this) {
      ArrayDeque<MemorySegment> blocks = free.get(size);
      MemorySegment reused = blocks == null ? null : blocks.poll();
      if (reused != null) {
        freeBytes -= size;
        return reused;
      }
    }
    return allocate(size);
  }

  /** Returns a buffer from {@link #borrow}; the caller no longer touches it. */
  public void giveBack(MemorySegment buffer) {
    long size = buffer.byteSize();
    synchronized (this) {
      if (freeBytes + size <= KEEP_BYTES) {
        free.computeIfAbsent(size, k -> new ArrayDeque<>()).push(buffer);
        freeBytes += size;
        return;
      }
    }
    context.bind();
    Driver.call("cuMemFreeHost", () -> (int) Driver.cuMemFreeHost.invokeExact(buffer));
  }

  static long sizeClass(long bytes) {
    if (bytes >= MIB2) {
      return (bytes + MIB2 - 1) / MIB2 * MIB2;
    }
    return Math.max(4096, Long.highestOneBit(bytes - 1) << 1);
  }

  private MemorySegment allocate(long size) {
    context.bind();
    return hostAlloc(size);
  }

  /**
   * {@code cuMemHostAlloc} of {@code size} bytes (the context current on this thread), or null when
   * the driver refuses.
   */
  static MemorySegment hostAlloc(long size) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
      int status;
      try {
        status = (int) Driver.cuMemHostAlloc.invokeExact(out, size, 0);
      } catch (Throwable t) {
        throw Ffm.rethrow("cuMemHostAlloc", t);
      }
      return status == 0 ? out.get(ValueLayout.ADDRESS, 0).reinterpret(size) : null;
    }
  }
}
