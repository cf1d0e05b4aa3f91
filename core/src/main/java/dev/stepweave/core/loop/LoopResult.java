package dev.stepweave.core.loop;

import dev.stepweave.core.request.Artifact;
import dev.stepweave.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * What a finished loop hands on: named tensors for the next loop of a program, artifacts for the
 * user, and a report of what its extensions did ("dbcache.skipped_blocks" → 12), which the runtime
 * records on the request's artifacts and in metrics.
 */
public record LoopResult(
    Map<String, Tensor> tensors, List<Artifact> artifacts, Map<String, Long> report) {
  public LoopResult {
    tensors = Map.copyOf(tensors);
    artifacts = List.copyOf(artifacts);
    report = Map.copyOf(report);
  }

  public LoopResult(Map<String, Tensor> tensors, List<Artifact> artifacts) {
    this(tensors, artifacts, Map.of());
  }

  public Tensor tensor(String name) {
    Tensor t = tensors.get(name);
    if (t == null) {
      throw new IllegalStateException(
          "loop result has no tensor '" + name + "' (has " + tensors.keySet() + ")");
    }
    return t;
  }
}
