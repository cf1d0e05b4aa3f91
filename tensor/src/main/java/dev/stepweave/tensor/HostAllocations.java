package dev.stepweave.tensor;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Uninitialised host memory allocated and not yet freed ({@link
 * Storage#allocateHostUninitialized}). The garbage collector frees such memory only once it finds
 * the tensors unreachable, and it does not see native memory; so, as the JDK does for its own
 * native segments (which count against {@code MaxDirectMemorySize}, by default the heap's maximum),
 * past a limit a collection is asked for — at most one every {@value #GC_INTERVAL_MS} ms, so a
 * burst of allocations does not collect over and over.
 */
final class HostAllocations {
  static final long GC_INTERVAL_MS = 100;

  /** The process's: collections past the heap's maximum outstanding. */
  static final HostAllocations PROCESS = new HostAllocations(Runtime.getRuntime().maxMemory());

  private final long collectBeyond;
  private final AtomicLong outstanding = new AtomicLong();
  private final AtomicLong lastCollection = new AtomicLong(Long.MIN_VALUE / 2);

  HostAllocations(long collectBeyond) {
    this.collectBeyond = collectBeyond;
  }

  void allocated(long bytes) {
    if (outstanding.addAndGet(bytes) > collectBeyond) {
      long now = System.nanoTime() / 1_000_000;
      long last = lastCollection.get();
      if (now - last >= GC_INTERVAL_MS && lastCollection.compareAndSet(last, now)) {
        System.gc();
      }
    }
  }

  void freed(long bytes) {
    outstanding.addAndGet(-bytes);
  }

  long outstanding() {
    return outstanding.get();
  }
}
