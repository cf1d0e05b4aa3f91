package dev.stepweave.tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A block of memory that tensors view. On the CPU the segment is readable memory (heap-free,
 * off-heap or memory-mapped); a device backend may wrap a device address in a segment that Java
 * must not dereference.
 */
public final class Storage {
  private static final long ALIGNMENT = 64;

  private final MemorySegment segment;
  private final Device device;

  public Storage(MemorySegment segment, Device device) {
    this.segment = segment;
    this.device = device;
  }

  /**
   * Zeroed host memory, 64-byte aligned for vector loads, released when unreachable. Big
   * activations come and go every step; the automatic arena lets the GC reclaim them with the
   * tensor.
   */
  public static Storage allocateHost(long bytes) {
    MemorySegment seg = Arena.ofAuto().allocate(Math.max(bytes, 1), ALIGNMENT);
    return new Storage(seg, Device.CPU);
  }

  public MemorySegment segment() {
    return segment;
  }

  public Device device() {
    return device;
  }

  public long byteSize() {
    return segment.byteSize();
  }
}
