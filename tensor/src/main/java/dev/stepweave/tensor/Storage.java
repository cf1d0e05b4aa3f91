package dev.stepweave.tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * A block of memory that tensors view. On the CPU the segment is readable memory (heap-free,
 * off-heap or memory-mapped); a device backend may wrap a device address in a segment that Java
 * must not dereference.
 */
public final class Storage {
  private static final long ALIGNMENT = 64;

  /**
   * With {@code -Dstepweave.cpu.poison=true} (the test suites set it) uninitialised memory is
   * filled with 0xFF bytes — NaN in every floating type — so an operation that leaves any element
   * of an output it claims to write in full unwritten shows up as NaN, not as a lucky zero.
   */
  private static final boolean POISON = Boolean.getBoolean("stepweave.cpu.poison");

  /**
   * C's {@code aligned_alloc} and {@code free} (null where the C library has no {@code
   * aligned_alloc}: uninitialised allocations are then zeroed ones). Zeroing is a pass over memory
   * an output overwrites anyway: a sixth of a CPU training step's time in the profiles.
   */
  private static final MethodHandle ALIGNED_ALLOC = libc("aligned_alloc", true);

  private static final MethodHandle FREE = libc("free", false);

  private static MethodHandle libc(String name, boolean allocates) {
    Linker linker = Linker.nativeLinker();
    Optional<MemorySegment> symbol = linker.defaultLookup().find(name);
    if (symbol.isEmpty()) {
      return null;
    }
    FunctionDescriptor fd =
        allocates
            ? FunctionDescriptor.of(
                ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG)
            : FunctionDescriptor.ofVoid(ValueLayout.ADDRESS);
    return linker.downcallHandle(symbol.get(), fd);
  }

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

  /**
   * Host memory whose contents are undefined, for an output its operation writes in full; 64-byte
   * aligned, released when unreachable, like {@link #allocateHost}.
   */
  public static Storage allocateHostUninitialized(long bytes) {
    return allocateHostUninitialized(bytes, HostAllocations.PROCESS);
  }

  /** {@link #allocateHostUninitialized(long)}, accounted in {@code allocations}. */
  static Storage allocateHostUninitialized(long bytes, HostAllocations allocations) {
    if (ALIGNED_ALLOC == null || FREE == null) {
      return allocateHost(bytes);
    }
    // aligned_alloc wants a multiple of the alignment.
    long size = (Math.max(bytes, 1) + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    MemorySegment raw;
    try {
      raw = (MemorySegment) ALIGNED_ALLOC.invokeExact(ALIGNMENT, size);
    } catch (Throwable t) {
      throw new IllegalStateException("aligned_alloc failed", t);
    }
    if (raw.address() == 0) {
      throw new OutOfMemoryError("cannot allocate " + size + " bytes of host memory");
    }
    allocations.allocated(size);
    MemorySegment seg =
        raw.reinterpret(
            Math.max(bytes, 1),
            Arena.ofAuto(),
            freed -> {
              free(freed);
              allocations.freed(size);
            });
    if (POISON) {
      seg.fill((byte) 0xFF);
    }
    return new Storage(seg, Device.CPU);
  }

  private static void free(MemorySegment seg) {
    try {
      FREE.invokeExact(seg);
    } catch (Throwable t) {
      throw new IllegalStateException("free failed", t);
    }
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
