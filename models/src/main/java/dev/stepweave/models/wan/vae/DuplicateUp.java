package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * The shortcut around a residual decoder stage that upsamples (the reference's {@code DupUp3D}):
 * every input channel is repeated, and the repeats are unfolded into {@code t × s × s} blocks of
 * the stage's output. On the decode's first chunk, which the temporal upsampler lets through
 * without doubling time, the first {@code t − 1} unfolded frames are dropped, as the reference
 * does, so that the shortcut keeps the path's frame count.
 */
final class DuplicateUp {
  private final Backend backend;
  private final int outChannels;
  private final int timeFactor;
  private final int spaceFactor;
  private final int repeats;

  DuplicateUp(Backend backend, int inChannels, int outChannels, int timeFactor, int spaceFactor) {
    this.backend = backend;
    this.outChannels = outChannels;
    this.timeFactor = timeFactor;
    this.spaceFactor = spaceFactor;
    this.repeats = outChannels * timeFactor * spaceFactor * spaceFactor / inChannels;
  }

  Tensor apply(Tensor x, boolean firstChunk) {
    int b = x.dim(0);
    int c = x.dim(1);
    int t = x.dim(2);
    int h = x.dim(3);
    int w = x.dim(4);
    Tensor repeated =
        repeats == 1
            ? backend.contiguous(x)
            : backend.contiguous(x.unsqueeze(2).expand(b, c, repeats, t, h, w));
    Tensor blocks =
        repeated
            .reshape(b, outChannels, timeFactor, spaceFactor, spaceFactor, t, h, w)
            .permute(0, 1, 5, 2, 6, 3, 7, 4);
    Tensor y =
        backend
            .contiguous(blocks)
            .reshape(b, outChannels, t * timeFactor, h * spaceFactor, w * spaceFactor);
    return firstChunk ? y.slice(2, timeFactor - 1, t * timeFactor) : y;
  }
}
