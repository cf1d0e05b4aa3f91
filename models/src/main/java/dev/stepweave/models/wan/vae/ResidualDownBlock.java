package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.List;

/**
 * A stage of the residual (Wan 2.2) encoder: residual blocks and, on all stages but the last, a
 * {@link Downsample}, the whole stage bypassed by an {@link AverageDown} shortcut from its input.
 */
final class ResidualDownBlock implements CausalLayer {
  private final Backend backend;
  private final List<CausalLayer> path;
  private final AverageDown shortcut;

  private ResidualDownBlock(Backend backend, List<CausalLayer> path, AverageDown shortcut) {
    this.backend = backend;
    this.path = List.copyOf(path);
    this.shortcut = shortcut;
  }

  /**
   * Loads {@code resnets.*} and, when {@code downsample}, {@code downsampler}.
   *
   * @param temporal whether the downsampler also halves time
   */
  static ResidualDownBlock load(
      Weights weights,
      int in,
      int out,
      int resBlocks,
      boolean downsample,
      boolean temporal,
      CacheSlots slots,
      ConvolutionPrecision precision) {
    List<CausalLayer> path = new ArrayList<>();
    int width = in;
    for (int r = 0; r < resBlocks; r++) {
      path.add(ResidualBlock.load(weights.scope("resnets." + r), width, out, slots, precision));
      width = out;
    }
    if (downsample) {
      path.add(Downsample.load(weights.scope("downsampler"), out, temporal, slots, precision));
    }
    int timeFactor = downsample && temporal ? 2 : 1;
    int spaceFactor = downsample ? 2 : 1;
    return new ResidualDownBlock(
        weights.backend(),
        path,
        new AverageDown(weights.backend(), in, out, timeFactor, spaceFactor));
  }

  @Override
  public Tensor apply(Tensor x, CausalCache cache) {
    Tensor h =
        backend.chain(x, 0, path.size(), (i, y) -> path.get(i).apply(y, cache), cache::remembered);
    return backend.add(h, shortcut.apply(x));
  }
}
