package dev.stepweave.core.memory;

import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.SwappedComponents;
import dev.stepweave.tensor.ComponentMemory;
import dev.stepweave.tensor.DeviceMemory;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The device memory admission may reserve requests against (the engine configuration's {@code
 * memoryBudgetBytes}), from what the device reports: its total memory, less the component pools
 * that hold the weights (counted awake, since a sleeping component wakes when it is used; of
 * components that take turns, one awake at a time, only the largest), less what was in use outside
 * Stepweave when measured (the driver's context, libraries, other processes), less a stated
 * headroom for what no reservation counts — the allocator's size rounding and cache, library
 * workspaces, recorded CUDA graphs' pools, the model's shared caches, modules loaded later.
 *
 * @param deviceBytes the device's total memory
 * @param components the component pools, each with its awake size
 * @param takingTurns the tags of the pools of which only one is awake at a time ({@link
 *     dev.stepweave.core.loop.SwappedComponents#poolTags}); empty when all stay awake
 * @param outsideBytes memory in use that neither the pools nor the backend's allocator held
 * @param headroomBytes memory kept out of the budget
 */
public record MemoryBudget(
    long deviceBytes,
    List<ComponentMemory> components,
    Set<String> takingTurns,
    long outsideBytes,
    long headroomBytes) {

  /** The headroom when none is stated: this fraction of the device's memory. */
  public static final double DEFAULT_HEADROOM_FRACTION = 0.10;

  public MemoryBudget {
    if (deviceBytes < 0 || outsideBytes < 0 || headroomBytes < 0) {
      throw new IllegalArgumentException("negative memory in a budget");
    }
    components = List.copyOf(components);
    takingTurns = Set.copyOf(takingTurns);
  }

  /** The budget of {@code memory} with {@code headroomBytes} kept out, every component awake. */
  public static MemoryBudget of(DeviceMemory memory, long headroomBytes) {
    return of(memory, headroomBytes, Set.of());
  }

  /**
   * The budget of {@code memory} with {@code headroomBytes} kept out, the pools {@code takingTurns}
   * counted as one awake at a time.
   */
  public static MemoryBudget of(DeviceMemory memory, long headroomBytes, Set<String> takingTurns) {
    return new MemoryBudget(
        memory.totalBytes(),
        memory.components(),
        takingTurns,
        memory.outsideBytes(),
        headroomBytes);
  }

  /**
   * The budget of {@code model}'s device as it is now, with {@code headroomBytes} kept out (empty:
   * the {@linkplain #defaultHeadroom default}); empty on a backend without device memory (the CPU),
   * whose budget stays what the configuration says.
   */
  public static Optional<MemoryBudget> measure(ModelInstance model, OptionalLong headroomBytes) {
    Set<String> takingTurns =
        model.swappedComponents().map(SwappedComponents::poolTags).orElse(Set.of());
    return model
        .backend()
        .deviceMemory()
        .map(
            m ->
                of(m, headroomBytes.orElseGet(() -> defaultHeadroom(m.totalBytes())), takingTurns));
  }

  /** {@link #DEFAULT_HEADROOM_FRACTION} of {@code deviceBytes}. */
  public static long defaultHeadroom(long deviceBytes) {
    return (long) (deviceBytes * DEFAULT_HEADROOM_FRACTION);
  }

  /**
   * Bytes the component pools hold with every component awake, but of those taking turns only the
   * largest.
   */
  public long componentBytes() {
    long alwaysAwake =
        components.stream()
            .filter(c -> !takingTurns.contains(c.component()))
            .mapToLong(ComponentMemory::awakeBytes)
            .sum();
    long largestTakingTurns =
        components.stream()
            .filter(c -> takingTurns.contains(c.component()))
            .mapToLong(ComponentMemory::awakeBytes)
            .max()
            .orElse(0);
    return alwaysAwake + largestTakingTurns;
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
                .collect(Collectors.joining(", "))
            + (takingTurns.isEmpty()
                ? ""
                : "; of "
                    + String.join(", ", new java.util.TreeSet<>(takingTurns))
                    + " one awake at a time");
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
