package dev.stepweave.models.wan;

import java.util.OptionalLong;

/**
 * How {@link WanModel#load} places a checkpoint on its backend.
 *
 * @param experts how a two-expert checkpoint's experts share the device
 * @param memoryHeadroomBytes device memory the {@link ExpertResidency#AUTO} choice keeps out, as
 *     the admission budget does ({@code --memory-headroom}; empty: its default, a tenth of the
 *     device)
 */
public record WanLoadOptions(ExpertResidency experts, OptionalLong memoryHeadroomBytes) {
  /** {@link ExpertResidency#AUTO} with the default headroom. */
  public static final WanLoadOptions DEFAULT = new WanLoadOptions(ExpertResidency.AUTO);

  public WanLoadOptions {
    java.util.Objects.requireNonNull(experts, "experts");
    java.util.Objects.requireNonNull(memoryHeadroomBytes, "memoryHeadroomBytes");
  }

  /** {@code experts} with the default headroom. */
  public WanLoadOptions(ExpertResidency experts) {
    this(experts, OptionalLong.empty());
  }
}
