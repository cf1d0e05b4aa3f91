package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.TensorSource;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/** Tensors in memory, by name, as a {@link TensorSource}: weights a model loads from memory. */
public final class TensorMap implements TensorSource {
  private final Map<String, Tensor> tensors;
  private final String what;

  /**
   * @param what what the tensors are, for error messages (in place of a file name)
   */
  public TensorMap(Map<String, Tensor> tensors, String what) {
    this.tensors = new TreeMap<>(tensors);
    this.what = what;
  }

  @Override
  public Set<String> keys() {
    return tensors.keySet();
  }

  @Override
  public TensorInfo info(String key) {
    Tensor t = tensors.get(key);
    return new TensorInfo(key, t.dtype(), t.shape());
  }

  @Override
  public Tensor load(String key) {
    return tensors.get(key);
  }

  @Override
  public Path fileOf(String key) {
    return Path.of(what);
  }

  @Override
  public Map<String, String> metadata() {
    return Map.of();
  }

  @Override
  public void close() {}
}
