package dev.stepweave.models.wan;

import dev.stepweave.core.memory.MemoryBudget;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * How a two-expert checkpoint's experts (Wan2.2 A14B: {@code transformer} for the high-noise steps,
 * {@code transformer_2} for the rest) share the device. A one-expert checkpoint keeps its
 * transformer awake whatever the policy.
 */
public enum ExpertResidency {
  /** Both experts awake: a switch costs nothing, the device must hold both. */
  RESIDENT("resident"),
  /**
   * One expert awake at a time: the idle one is parked in host memory, and before a step of the
   * sleeping one the awake one sleeps and the other wakes (≈ 18 s for a 14B expert on an H200). The
   * device holds one expert, and the engine switches rarely (docs/scheduler.md).
   */
  ONE_AT_A_TIME("swap"),
  /**
   * {@link #ONE_AT_A_TIME} only where the device cannot hold every component awake together with
   * what the card's default request reserves; else {@link #RESIDENT}. A backend without device
   * memory (the CPU) keeps both.
   */
  AUTO("auto");

  private final String wireName;

  ExpertResidency(String wireName) {
    this.wireName = wireName;
  }

  /** The name options use: {@code resident}, {@code swap} or {@code auto}. */
  public String wireName() {
    return wireName;
  }

  /**
   * The policy named {@code name} ({@link #wireName}, any case).
   *
   * @throws IllegalArgumentException naming the value and the choices
   */
  public static ExpertResidency parse(String name) {
    for (ExpertResidency r : values()) {
      if (r.wireName.equals(name.toLowerCase(Locale.ROOT))) {
        return r;
      }
    }
    throw new IllegalArgumentException(
        "unknown expert residency '"
            + name
            + "' (available: "
            + Arrays.stream(values())
                .map(ExpertResidency::wireName)
                .collect(Collectors.joining(", "))
            + ")");
  }

  /**
   * What this policy comes to for two experts that take {@code expertsBytes} of device memory
   * together, on a device whose admission budget with the other components loaded is {@code budget}
   * (empty on a backend without device memory), when the card's default request reserves {@code
   * defaultRequestBytes}: {@link #AUTO} becomes {@link #RESIDENT} when both experts and that
   * request fit the budget, else {@link #ONE_AT_A_TIME}; the others stay what they are.
   */
  ExpertChoice choose(Optional<MemoryBudget> budget, long expertsBytes, long defaultRequestBytes) {
    if (this != AUTO) {
      return new ExpertChoice(this, "--experts " + wireName);
    }
    if (budget.isEmpty()) {
      return new ExpertChoice(RESIDENT, "auto: the backend has no device memory to save");
    }
    long left = budget.get().requestBytes();
    boolean fits = left - expertsBytes >= defaultRequestBytes;
    return new ExpertChoice(
        fits ? RESIDENT : ONE_AT_A_TIME,
        "auto: both experts ("
            + size(expertsBytes)
            + ") and the default request ("
            + size(defaultRequestBytes)
            + ") "
            + (fits ? "fit" : "do not fit")
            + " the "
            + size(left)
            + " the device has for them");
  }

  /** "57.3 GiB", or in MiB below one GiB. */
  private static String size(long bytes) {
    return bytes >= 1L << 30
        ? String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30))
        : String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
  }
}
