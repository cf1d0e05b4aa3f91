package dev.stepweave.tensor;

import java.util.List;

/**
 * One moment's account of a device's memory, as a device backend reports it ({@link
 * Backend#deviceMemory}): what the driver says and what the backend holds of it.
 *
 * @param totalBytes the device's memory
 * @param freeBytes what the driver could still hand out
 * @param allocatorBytes what the backend's caching allocator holds from the driver (live tensors,
 *     its cache of free blocks, recorded graphs' pools)
 * @param components the per-component weight pools, in load order
 */
public record DeviceMemory(
    long totalBytes, long freeBytes, long allocatorBytes, List<ComponentMemory> components) {
  public DeviceMemory {
    if (totalBytes < 0 || freeBytes < 0 || freeBytes > totalBytes || allocatorBytes < 0) {
      throw new IllegalArgumentException(
          "inconsistent device memory: total "
              + totalBytes
              + ", free "
              + freeBytes
              + ", allocator "
              + allocatorBytes);
    }
    components = List.copyOf(components);
  }

  /** Physical bytes the component pools hold now (asleep ones hold none). */
  public long componentBytes() {
    return components.stream().mapToLong(ComponentMemory::reservedBytes).sum();
  }

  /** Physical bytes the component pools hold with every component awake. */
  public long awakeComponentBytes() {
    return components.stream().mapToLong(ComponentMemory::awakeBytes).sum();
  }

  /**
   * Bytes in use that neither the component pools nor the allocator hold: the driver's context,
   * loaded modules, libraries' own allocations and other processes on the device.
   */
  public long outsideBytes() {
    return Math.max(0, totalBytes - freeBytes - componentBytes() - allocatorBytes);
  }
}
