package dev.stepweave.models.text;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.TensorSource;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * A checkpoint as another layout would store it: extra names that alias stored tensors, and stored
 * names left out. For testing how loading treats such checkpoints without writing files.
 */
final class EditedSource implements TensorSource {
  private final TensorSource base;
  private final Map<String, String> aliases;
  private final Set<String> removed;

  EditedSource(TensorSource base, Map<String, String> aliases, Set<String> removed) {
    this.base = base;
    this.aliases = aliases;
    this.removed = removed;
  }

  private String stored(String key) {
    return aliases.getOrDefault(key, key);
  }

  @Override
  public Set<String> keys() {
    Set<String> keys = new TreeSet<>(base.keys());
    keys.removeAll(removed);
    keys.addAll(aliases.keySet());
    return keys;
  }

  @Override
  public TensorInfo info(String key) {
    TensorInfo info = base.info(stored(key));
    return new TensorInfo(key, info.dtype(), info.shape());
  }

  @Override
  public Tensor load(String key) {
    return base.load(stored(key));
  }

  @Override
  public Path fileOf(String key) {
    return base.fileOf(stored(key));
  }

  @Override
  public Map<String, String> metadata() {
    return base.metadata();
  }

  @Override
  public void close() {
    base.close();
  }
}
