package dev.stepweave.core.memory;

import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.tensor.ComponentMemory;
import dev.stepweave.tensor.DeviceMemory;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.stream.Collectors;

/**
 * The device memory admission may reserve requests against (the engine configuration's {@code
 * memoryBudgetBytes}), from what the device reports: its total memory, less the component pools
 * that hold the weights (counted awake, since a sleeping component wakes when it is used), less
 * what was in use outside Stepweave when measured (the driver's context, libraries, other
 * processes), less a stated headroom for what no reservation counts — the allocator's size rounding
 * and cache, library workspaces, recorded CUDA graphs' pools, the model's shared caches, modules
 * loaded later.
 *
 * @param deviceBytes the device's total memory
 * @param components the component pools, each with its awake size
 * @param outsideBytes memory in use that neither the pools nor the backend's allocator held
 * @param headroomBytes memory kept out of the budget
 */
public record MemoryBudget(
    long deviceBytes, List<ComponentMemory> components, long outsideBytes, long headroomBytes) {

  /** The headroom when none is stated: this fraction of the device's memory. */
  public static final double DEFAULT_HEADROOM_FRACTION = 0.10;

  public MemoryBudget {
    if (deviceBytes < 0 || outsideBytes < 0 || headroomBytes < 0) {
      throw new IllegalArgumentException("negative memory in a budget");
    }
    components = List.copyOf(components);
  }

  /** The budget of {@code memory} with {@code headroomBytes} kept out. */
  public static MemoryBudget of(DeviceMemory memory, long headroomBytes) {
    return new MemoryBudget(
        memory.totalBytes(), memory.components(), memory.outsideBytes(), headroomBytes);
  }

  /**
   * The budget of {@code model}'s device as it is now, with {@code headroomBytes} kept out (empty:
   * the {@linkplain #defaultHeadroom default}); empty on a backend without device memory (the CPU),
   * whose budget stays what the configuration says.
   */
  public static Optional<MemoryBudget> measure(ModelInstance model, OptionalLong headroomBytes) {
    return model
        .backend()
        .deviceMemory()
        .map(m -> of(m, headroomBytes.orElseGet(() -> defaultHeadroom(m.totalBytes()))));
  }

  /** {@link #DEFAULT_HEADROOM_FRACTION} of {@code deviceBytes}. */
  public static long defaultHeadroom(long deviceBytes) {
    return (long) (deviceBytes * DEFAULT_HEADROOM_FRACTION);
  }

  /** Bytes the component pools hold with every component awake. */
  public long componentBytes() {
    return components.stream().mapToLong(ComponentMemory::awakeBytes).sum();
  }

  /** What requests may reserve: the device less the pools, the outside use and the headroom. */
  public long requestBytes() {
    return Math.max(0, deviceBytes - componentBytes() - outsideBytes - headroomBytes);
  }

  /**
   * One line for the log: "memory budget: 139.8 GiB device − 6.9 GiB weights (wan-…/text_encoder
   * 4.3, …) − 0.6 GiB in use outside − 14.0 GiB headroom = 118.3 GiB for requests".
   */
  public String describe() {
    String weights =
        components.stream()
            .map(c -> c.component() + " " + gib(c.awakeBytes()) + (c.asleep() ? " asleep" : ""))
            .collect(Collectors.joining(", "));
    return "memory budget: "
        + gib(deviceBytes)
        + " GiB device − "
        + gib(componentBytes())
        + " GiB weights"
        + (weights.isEmpty() ? "" : " (" + weights + ")")
        + " − "
        + gib(outsideBytes)
        + " GiB in use outside Stepweave − "
        + gib(headroomBytes)
        + " GiB headroom = "
        + gib(requestBytes())
        + " GiB for requests (resident + peak, reserved at admission)";
  }

  private static String gib(long bytes) {
    return String.format(Locale.ROOT, "%.1f", bytes / (double) (1L << 30));
  }
}
