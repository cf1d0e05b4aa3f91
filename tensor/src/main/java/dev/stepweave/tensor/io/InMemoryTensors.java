package dev.stepweave.tensor.io;

import dev.stepweave.tensor.Tensor;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

/**
 * Named host tensors as a {@link TensorSource}: weights that exist only in memory (a trainer's
 * parameters synced into a serving model) load through the same strict {@link Weights} path as a
 * checkpoint, so a missing, extra or misshapen tensor is the same one-line error.
 */
public final class InMemoryTensors implements TensorSource {
  private final Map<String, Tensor> tensors;
  private final String description;

  /**
   * @param tensors host tensors by name
   * @param description what they are, for error messages (stands where a file name would)
   */
  public InMemoryTensors(Map<String, Tensor> tensors, String description) {
    this.tensors = Map.copyOf(tensors);
    this.description = description;
  }

  @Override
  public Set<String> keys() {
    return tensors.keySet();
  }

  @Override
  public TensorInfo info(String key) {
    Tensor t = get(key);
    return new TensorInfo(key, t.dtype(), t.shape());
  }

  @Override
  public Tensor load(String key) {
    return get(key);
  }

  private Tensor get(String key) {
    Tensor t = tensors.get(key);
    if (t == null) {
      throw new CheckpointException(description + ": no tensor '" + key + "'");
    }
    return t;
  }

  @Override
  public Path fileOf(String key) {
    return Path.of(description);
  }

  @Override
  public Map<String, String> metadata() {
    return Map.of();
  }

  @Override
  public void close() {}
}
