package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.List;

/**
 * A stage of the residual (Wan 2.2) decoder that upsamples: residual blocks and an {@link Upsample}
 * that keeps the width, the whole stage bypassed by a {@link DuplicateUp} shortcut from its input.
 * (The last stage, which does not upsample, has no shortcut: it is plain residual blocks.)
 */
final class ResidualUpBlock implements CausalLayer {
  private final Backend backend;
  private final List<CausalLayer> path;
  private final Upsample upsampler;
  private final DuplicateUp shortcut;

  private ResidualUpBlock(
      Backend backend, List<CausalLayer> path, Upsample upsampler, DuplicateUp shortcut) {
    this.backend = backend;
    this.path = List.copyOf(path);
    this.upsampler = upsampler;
    this.shortcut = shortcut;
  }

  /**
   * Loads {@code resnets.0…resBlocks} and {@code upsampler}.
   *
   * @param temporal whether the upsampler also doubles time
   */
  static ResidualUpBlock load(
      Weights weights,
      int in,
      int out,
      int resBlocks,
      boolean temporal,
      CacheSlots slots,
      ConvolutionPrecision precision) {
    List<CausalLayer> path = new ArrayList<>();
    int width = in;
    for (int r = 0; r <= resBlocks; r++) {
      path.add(ResidualBlock.load(weights.scope("resnets." + r), width, out, slots, precision));
      width = out;
    }
    Upsample upsampler =
        Upsample.load(weights.scope("upsampler"), out, out, temporal, slots, precision);
    path.add(upsampler);
    return new ResidualUpBlock(
        weights.backend(),
        path,
        upsampler,
        new DuplicateUp(weights.backend(), in, out, temporal ? 2 : 1, 2));
  }

  @Override
  public Tensor apply(Tensor x, CausalCache cache) {
    // Asked before the upsampler runs, which marks its first chunk as passed.
    boolean firstChunk = upsampler.awaitsFirstChunk(cache);
    Tensor h =
        backend.chain(x, 0, path.size(), (i, y) -> path.get(i).apply(y, cache), cache::remembered);
    return shortcut.addTo(h, x, firstChunk);
  }
}
