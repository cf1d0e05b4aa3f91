package dev.stepweave.core.card;

import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which components each task needs: explicit, instead of guessing from file names.
 *
 * @param components component id → the tasks it is required and optional for
 */
public record CheckpointManifest(Map<String, Requirement> components) {
  public CheckpointManifest {
    components = Map.copyOf(components);
  }

  /** The component ids a task cannot run without, sorted. */
  public Set<String> requiredFor(TaskType task) {
    Set<String> out = new TreeSet<>();
    components.forEach(
        (id, req) -> {
          if (req.requiredFor().contains(task)) {
            out.add(id);
          }
        });
    return out;
  }

  /** The tasks one component is required and optional for. */
  public record Requirement(Set<TaskType> requiredFor, Set<TaskType> optionalFor) {
    public Requirement {
      requiredFor = Set.copyOf(requiredFor);
      optionalFor = Set.copyOf(optionalFor);
    }
  }
}
