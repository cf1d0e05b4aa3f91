package dev.stepweave.cuda.memory;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.Driver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Device memory for one model component (e.g. "transformer" weights) on CUDA virtual memory: a
 * reserved address range backed by physical chunks mapped on demand. {@link #sleep} copies the
 * contents to (page-locked, when the driver grants it) host memory and releases the physical
 * memory; {@link #wake} maps new physical memory at the same addresses and restores the contents,
 * so tensors holding those addresses stay valid. {@link #reservedBytes} is exact: the physical
 * bytes this component holds now.
 */
public final class VirtualMemoryPool implements AutoCloseable {
  // CUmemAllocationProp: type, requestedHandleTypes, location{type, id}, win32 pointer, flags.
  private static final long PROP_BYTES = 32;
  private static final int CU_MEM_ALLOCATION_TYPE_PINNED = 1;
  private static final int CU_MEM_LOCATION_TYPE_DEVICE = 1;
  private static final int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3;
  private static final int CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1;

  private final String component;
  private final CudaContext context;
  private final long base;
  private final long capacity;
  private final long chunk;
  private final List<Long> handles = new ArrayList<>();
  private long used;
  private MemorySegment parked;
  private boolean parkedPinned;

  /**
   * Reserves {@code capacity} bytes of address space (rounded up to the allocation granularity) for
   * {@code component}; no physical memory is taken until {@link #allocate}.
   */
  public VirtualMemoryPool(String component, CudaContext context, long capacity) {
    this.component = component;
    this.context = context;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment prop = properties(arena, context.device());
      MemorySegment gran = arena.allocate(ValueLayout.JAVA_LONG);
      Driver.call(
          "cuMemGetAllocationGranularity",
          () ->
              (int)
                  Driver.cuMemGetAllocationGranularity.invokeExact(
                      gran, prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
      this.chunk = Math.max(gran.get(ValueLayout.JAVA_LONG, 0), 2L << 20);
      this.capacity = roundUp(capacity, chunk);
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      long size = this.capacity;
      long align = chunk;
      Driver.call(
          "cuMemAddressReserve",
          () -> (int) Driver.cuMemAddressReserve.invokeExact(out, size, align, 0L, 0L));
      this.base = out.get(ValueLayout.JAVA_LONG, 0);
    }
  }

  private static MemorySegment properties(Arena arena, int device) {
    MemorySegment prop = arena.allocate(PROP_BYTES, 8);
    prop.set(ValueLayout.JAVA_INT, 0, CU_MEM_ALLOCATION_TYPE_PINNED);
    prop.set(ValueLayout.JAVA_INT, 8, CU_MEM_LOCATION_TYPE_DEVICE);
    prop.set(ValueLayout.JAVA_INT, 12, device);
    return prop;
  }

  private static long roundUp(long v, long unit) {
    return (v + unit - 1) / unit * unit;
  }

  public String component() {
    return component;
  }

  /** Device address of a fresh 256-byte-aligned block of {@code bytes} inside the pool. */
  public synchronized long allocate(long bytes) {
    if (parked != null) {
      throw new IllegalStateException("pool '" + component + "' is asleep; wake it first");
    }
    long start = roundUp(used, 256);
    long end = start + bytes;
    if (end > capacity) {
      throw new IllegalStateException(
          "pool '" + component + "' of " + capacity + " bytes cannot fit " + bytes + " more");
    }
    while (mappedBytes() < end) {
      mapChunk();
    }
    used = end;
    return base + start;
  }

  private long mappedBytes() {
    return handles.size() * chunk;
  }

  private void mapChunk() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment prop = properties(arena, context.device());
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      long size = chunk;
      Driver.call("cuMemCreate", () -> (int) Driver.cuMemCreate.invokeExact(out, size, prop, 0L));
      long handle = out.get(ValueLayout.JAVA_LONG, 0);
      long at = base + mappedBytes();
      Driver.call("cuMemMap", () -> (int) Driver.cuMemMap.invokeExact(at, size, 0L, handle, 0L));
      // CUmemAccessDesc: location{type, id}, flags.
      MemorySegment access = arena.allocate(12, 4);
      access.set(ValueLayout.JAVA_INT, 0, CU_MEM_LOCATION_TYPE_DEVICE);
      access.set(ValueLayout.JAVA_INT, 4, context.device());
      access.set(ValueLayout.JAVA_INT, 8, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
      Driver.call(
          "cuMemSetAccess", () -> (int) Driver.cuMemSetAccess.invokeExact(at, size, access, 1L));
      handles.add(handle);
    }
  }

  /** Parks the contents in host memory and releases all physical memory; addresses stay. */
  public synchronized void sleep() {
    if (parked != null) {
      return;
    }
    context.synchronize();
    long bytes = mappedBytes();
    MemorySegment host = parkingSpace(bytes);
    if (bytes > 0) {
      Driver.call(
          "cuMemcpyDtoH_v2", () -> (int) Driver.cuMemcpyDtoH_v2.invokeExact(host, base, bytes));
    }
    unmapAll();
    parked = host;
  }

  /** Maps physical memory again at the same addresses and restores the parked contents. */
  public synchronized void wake() {
    if (parked == null) {
      return;
    }
    long bytes = parkedBytes();
    while (mappedBytes() < bytes) {
      mapChunk();
    }
    MemorySegment host = parked;
    if (bytes > 0) {
      Driver.call(
          "cuMemcpyHtoD_v2", () -> (int) Driver.cuMemcpyHtoD_v2.invokeExact(base, host, bytes));
    }
    if (parkedPinned) {
      Driver.call("cuMemFreeHost", () -> (int) Driver.cuMemFreeHost.invokeExact(host));
    }
    parked = null;
    parkedPinned = false;
  }

  /**
   * Host memory for {@code bytes} of parked contents: page-locked when the driver grants it (the
   * copies run at full speed), else ordinary memory (slower, but sleeping never fails for want of
   * pinned memory).
   */
  private MemorySegment parkingSpace(long bytes) {
    if (bytes > 0) {
      MemorySegment pinned = PinnedHostBuffers.hostAlloc(bytes);
      if (pinned != null) {
        parkedPinned = true;
        return pinned;
      }
    }
    parkedPinned = false;
    return Arena.ofAuto().allocate(Math.max(bytes, 1), 64);
  }

  public boolean asleep() {
    return parked != null;
  }

  /** Physical device bytes this component holds now (zero while asleep). */
  public long reservedBytes() {
    return mappedBytes();
  }

  /** Physical device bytes this component holds when awake (what wake maps again, asleep). */
  public long awakeBytes() {
    return parked != null ? parkedBytes() : mappedBytes();
  }

  private long parkedBytes() {
    // An empty pool parks one byte (a zero-length host allocation is not allowed).
    return parked.byteSize() > 1 ? parked.byteSize() : 0;
  }

  /** Bytes handed out by {@link #allocate}. */
  public long usedBytes() {
    return used;
  }

  /** The unit physical memory is mapped in: the allocation granularity, at least 2 MiB. */
  public long chunkBytes() {
    return chunk;
  }

  /** Whether {@code address} lies in this pool's reserved address range. */
  public boolean contains(long address) {
    return address >= base && address - base < capacity;
  }

  private void unmapAll() {
    for (int i = 0; i < handles.size(); i++) {
      long at = base + i * chunk;
      long size = chunk;
      long handle = handles.get(i);
      Driver.call("cuMemUnmap", () -> (int) Driver.cuMemUnmap.invokeExact(at, size));
      Driver.call("cuMemRelease", () -> (int) Driver.cuMemRelease.invokeExact(handle));
    }
    handles.clear();
  }

  @Override
  public synchronized void close() {
    context.synchronize();
    unmapAll();
    if (parkedPinned) {
      MemorySegment host = parked;
      Driver.call("cuMemFreeHost", () -> (int) Driver.cuMemFreeHost.invokeExact(host));
    }
    parked = null;
    parkedPinned = false;
    long size = capacity;
    Driver.call("cuMemAddressFree", () -> (int) Driver.cuMemAddressFree.invokeExact(base, size));
  }
}
