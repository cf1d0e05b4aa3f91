package dev.stepweave.tensor.io;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * Named random tensors of given shapes, made on demand: uniform in [-scale, scale) from a hash of
 * the name, so a timing run needs no checkpoint. Repeated layers ({@code blocks.<i>.…}) share one
 * draw per parameter — timings do not depend on the values, and drawing the 14B's 14 billion
 * numbers on the host would dominate a benchmark run (the draws are kept: one layer's worth of host
 * memory).
 */
public final class RandomWeights implements TensorSource {
  private final Map<String, int[]> shapes;
  private final DType dtype;
  private final float scale;
  private final Map<String, Tensor> drawn = new HashMap<>();

  public RandomWeights(Map<String, int[]> shapes, DType dtype, float scale) {
    this.shapes = shapes;
    this.dtype = dtype;
    this.scale = scale;
  }

  /** A random F32 host tensor. */
  public static Tensor uniform(long seed, float scale, int... shape) {
    Tensor t = Tensor.zeros(DType.F32, shape);
    MemorySegment s = t.storage().segment();
    long n = t.numel();
    long state = seed * 0x9E3779B97F4A7C15L + 1;
    for (long i = 0; i < n; i++) {
      state ^= state << 13;
      state ^= state >>> 7;
      state ^= state << 17;
      float u = (state >>> 40) / (float) (1 << 24);
      s.setAtIndex(ValueLayout.JAVA_FLOAT, i, (2 * u - 1) * scale);
    }
    return t;
  }

  @Override
  public Set<String> keys() {
    return shapes.keySet();
  }

  @Override
  public TensorInfo info(String key) {
    return new TensorInfo(key, dtype, shapes.get(key));
  }

  @Override
  public Tensor load(String key) {
    String shared = key.replaceFirst("^blocks\\.\\d+\\.", "blocks.*.");
    return drawn.computeIfAbsent(
        shared,
        name -> {
          Tensor t = uniform(name.hashCode(), scale, shapes.get(key));
          return dtype == DType.F32 ? t : t.toHost(dtype);
        });
  }

  @Override
  public Path fileOf(String key) {
    return Path.of("random-weights");
  }

  @Override
  public Map<String, String> metadata() {
    return Map.of();
  }

  @Override
  public void close() {}
}
