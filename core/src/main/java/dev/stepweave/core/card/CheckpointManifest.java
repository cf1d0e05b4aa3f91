package dev.stepweave.core.card;

import java.util.Map;
import java.util.Set;

/**
 * Which components each task needs: explicit, instead of guessing from file names.
 *
 * @param components component id → the tasks it is required and optional for
 */
public record CheckpointManifest(Map<String, Requirement> components) {
  public CheckpointManifest {
    components = Map.copyOf(components);
  }

  /** The tasks one component is required and optional for. */
  public record Requirement(Set<TaskType> requiredFor, Set<TaskType> optionalFor) {
    public Requirement {
      requiredFor = Set.copyOf(requiredFor);
      optionalFor = Set.copyOf(optionalFor);
    }
  }
}
