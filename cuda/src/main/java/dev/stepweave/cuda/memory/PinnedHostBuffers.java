package dev.stepweave.cuda.memory;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.cuda.driver.Ffm;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Page-locked host buffers for queued device→host copies ({@link DeviceTensors#downloadQueued}): a
 * copy into pageable memory makes the driver stage it and wait, a copy into one of these runs on
 * the stream while the host goes on.
 *
 * <p>A buffer is handed out as a segment of an automatic arena; when the garbage collector finds
 * the segment unreachable its buffer comes back here for reuse (no driver call on the collector's
 * thread). Buffers come in size classes (powers of two up to 2 MiB, then multiples of 2 MiB), so a
 * run's captures of equal shapes reuse each other's. What is kept free beyond {@link #KEEP_BYTES}
 * is given back to the driver at the next {@link #take}, on a thread that has the context.
 */
public final class PinnedHostBuffers {
  /** Free page-locked memory kept for reuse; more is released (page-locked memory is scarce). */
  static final long KEEP_BYTES = 1L << 30;

  private static final long MIB2 = 2L << 20;

  private final CudaContext context;
  private final Map<Long, ArrayDeque<Long>> free = new HashMap<>();
  private final List<long[]> toRelease = new ArrayList<>();
  private long freeBytes;
  private long heldBytes;

  public PinnedHostBuffers(CudaContext context) {
    this.context = context;
  }

  /**
   * A segment of at least {@code bytes}: page-locked when the driver grants it, else ordinary
   * memory (the copy is then slower and waits, but never fails for want of pinned memory).
   */
  public MemorySegment take(long bytes) {
    MemorySegment pinned = tryTake(bytes);
    return pinned != null ? pinned : Arena.ofAuto().allocate(Math.max(bytes, 1), 64);
  }

  /** A page-locked segment of at least {@code bytes}, or null when the driver refuses one. */
  public MemorySegment tryTake(long bytes) {
    long size = sizeClass(Math.max(bytes, 1));
    releaseSurplus();
    Long ptr;
    synchronized (this) {
      ArrayDeque<Long> blocks = free.get(size);
      ptr = blocks == null ? null : blocks.poll();
      if (ptr != null) {
        freeBytes -= size;
      }
    }
    if (ptr == null) {
      ptr = allocate(size);
      if (ptr == null) {
        return null;
      }
      synchronized (this) {
        heldBytes += size;
      }
    }
    long address = ptr;
    return MemorySegment.ofAddress(address)
        .reinterpret(size, Arena.ofAuto(), unused -> giveBack(address, size))
        .asSlice(0, Math.max(bytes, 1));
  }

  /** Page-locked bytes allocated from the driver and not yet released. */
  public synchronized long heldBytes() {
    return heldBytes;
  }

  static long sizeClass(long bytes) {
    if (bytes >= MIB2) {
      return (bytes + MIB2 - 1) / MIB2 * MIB2;
    }
    return Math.max(4096, Long.highestOneBit(bytes - 1) << 1);
  }

  /** Called by the collector's cleaner: no driver call here. */
  private synchronized void giveBack(long address, long size) {
    if (freeBytes + size > KEEP_BYTES) {
      toRelease.add(new long[] {address, size});
      return;
    }
    free.computeIfAbsent(size, k -> new ArrayDeque<>()).push(address);
    freeBytes += size;
  }

  private void releaseSurplus() {
    List<long[]> release;
    synchronized (this) {
      if (toRelease.isEmpty()) {
        return;
      }
      release = new ArrayList<>(toRelease);
      toRelease.clear();
    }
    context.bind();
    for (long[] block : release) {
      MemorySegment p = MemorySegment.ofAddress(block[0]);
      Driver.call("cuMemFreeHost", () -> (int) Driver.cuMemFreeHost.invokeExact(p));
      synchronized (this) {
        heldBytes -= block[1];
      }
    }
  }

  private Long allocate(long size) {
    context.bind();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
      int status;
      try {
        status = (int) Driver.cuMemHostAlloc.invokeExact(out, size, 0);
      } catch (Throwable t) {
        throw Ffm.rethrow("cuMemHostAlloc", t);
      }
      return status == 0 ? out.get(ValueLayout.ADDRESS, 0).address() : null;
    }
  }
}
