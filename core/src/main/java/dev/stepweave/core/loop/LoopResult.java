package dev.stepweave.core.loop;

import dev.stepweave.core.request.Artifact;
import dev.stepweave.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * What a finished loop hands on: named tensors for the next loop of a program, and artifacts for
 * the user.
 */
public record LoopResult(Map<String, Tensor> tensors, List<Artifact> artifacts) {
  public LoopResult {
    tensors = Map.copyOf(tensors);
    artifacts = List.copyOf(artifacts);
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
