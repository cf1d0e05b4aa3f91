package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.TensorSource;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** A checkpoint with some tensors replaced or added (F32, in memory), without writing files. */
final class PatchedSource implements TensorSource {
  private final TensorSource base;
  private final Map<String, Tensor> patches;

  PatchedSource(TensorSource base, Map<String, Tensor> patches) {
    this.base = base;
    this.patches = Map.copyOf(patches);
  }

  @Override
  public Set<String> keys() {
    Set<String> keys = new TreeSet<>(base.keys());
    keys.addAll(patches.keySet());
    return keys;
  }

  @Override
  public TensorInfo info(String key) {
    Tensor patch = patches.get(key);
    return patch == null ? base.info(key) : new TensorInfo(key, DType.F32, patch.shape());
  }

  @Override
  public Tensor load(String key) {
    return patches.containsKey(key) ? patches.get(key) : base.load(key);
  }

  @Override
  public Path fileOf(String key) {
    return base.fileOf(key);
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
