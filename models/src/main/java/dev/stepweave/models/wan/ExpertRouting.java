package dev.stepweave.models.wan;

import java.util.List;

/**
 * Which transformer expert runs a denoising step (design §5.1; adversarial review M8): a pure
 * function of the sampler's timestep. Wan2.2 A14B switches from its high-noise expert ({@code
 * transformer}) to its low-noise one ({@code transformer_2}) once the timestep falls below {@code
 * boundary_ratio · num_train_timesteps}, as the reference pipeline does; a single-expert checkpoint
 * always runs {@code transformer}.
 *
 * @param experts the component ids of the experts, high noise first
 * @param boundaryTimestep steps at or above it run the first expert, the rest the second
 */
record ExpertRouting(List<String> experts, double boundaryTimestep) {
  static final String FIRST = "transformer";
  static final String SECOND = "transformer_2";

  /** One expert for every step. */
  static final ExpertRouting SINGLE = new ExpertRouting(List.of(FIRST), 0);

  ExpertRouting {
    experts = List.copyOf(experts);
    if (experts.isEmpty() || experts.size() > 2) {
      throw new IllegalArgumentException("one or two experts, got " + experts);
    }
  }

  /** Two experts switched at {@code boundaryRatio · trainTimesteps}. */
  static ExpertRouting twoExperts(double boundaryRatio, int trainTimesteps) {
    return new ExpertRouting(List.of(FIRST, SECOND), boundaryRatio * trainTimesteps);
  }

  boolean single() {
    return experts.size() == 1;
  }

  /** The index of the expert that runs at {@code timestep} (0 for the first). */
  int indexAt(double timestep) {
    return single() || timestep >= boundaryTimestep ? 0 : 1;
  }

  /** The component id of the expert that runs at {@code timestep}. */
  String expertAt(double timestep) {
    return experts.get(indexAt(timestep));
  }
}
