package dev.stepweave.models.wan;

/**
 * How a loaded model's experts share the device, and why.
 *
 * @param residency {@link ExpertResidency#RESIDENT} or {@link ExpertResidency#ONE_AT_A_TIME}, never
 *     {@link ExpertResidency#AUTO}
 * @param reason the option, or what {@code auto} weighed
 */
public record ExpertChoice(ExpertResidency residency, String reason) {
  public ExpertChoice {
    if (residency == ExpertResidency.AUTO) {
      throw new IllegalArgumentException("a choice is resident or one at a time, not auto");
    }
  }

  /** "one awake at a time (auto: both experts (57.3 GiB) and … do not fit …)". */
  public String describe() {
    return (residency == ExpertResidency.RESIDENT ? "both resident" : "one awake at a time")
        + " ("
        + reason
        + ")";
  }
}
