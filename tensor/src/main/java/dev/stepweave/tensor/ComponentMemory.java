package dev.stepweave.tensor;

/**
 * The device memory one model component's weights hold in a backend that pools them per component
 * (see {@link Backend#loadingComponent}).
 *
 * @param component the tag the component was loaded under
 * @param reservedBytes physical device bytes the component holds now: whole allocation chunks, zero
 *     while asleep
 * @param awakeBytes physical device bytes it holds when awake: {@code reservedBytes} while awake,
 *     what waking will map again while asleep
 * @param usedBytes bytes handed to its tensors (each rounded up to the pool's alignment), at most
 *     {@code awakeBytes}
 * @param asleep whether its contents are parked in host memory and its device memory released
 */
public record ComponentMemory(
    String component, long reservedBytes, long awakeBytes, long usedBytes, boolean asleep) {
  public ComponentMemory {
    if (reservedBytes < 0 || usedBytes < 0 || usedBytes > awakeBytes) {
      throw new IllegalArgumentException(
          "inconsistent memory of component '"
              + component
              + "': reserved "
              + reservedBytes
              + ", awake "
              + awakeBytes
              + ", used "
              + usedBytes);
    }
    if (asleep ? reservedBytes != 0 : reservedBytes != awakeBytes) {
      throw new IllegalArgumentException(
          "component '"
              + component
              + "' "
              + (asleep ? "asleep" : "awake")
              + " but holds "
              + reservedBytes
              + " of its "
              + awakeBytes
              + " bytes");
    }
  }
}
