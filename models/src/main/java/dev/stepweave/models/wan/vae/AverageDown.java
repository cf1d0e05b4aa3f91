package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * The shortcut around a residual encoder stage (the reference's {@code AvgDown3D}): every {@code t
 * × s × s} block of the input (time first padded with zero frames in front to a multiple of {@code
 * t}) is folded into channels, and consecutive groups of those channels are averaged down to the
 * stage's width. It needs no cache: each chunk is padded on its own, as the reference does.
 */
final class AverageDown {
  private final Backend backend;
  private final int outChannels;
  private final int timeFactor;
  private final int spaceFactor;
  private final int group;

  AverageDown(Backend backend, int inChannels, int outChannels, int timeFactor, int spaceFactor) {
    this.backend = backend;
    this.outChannels = outChannels;
    this.timeFactor = timeFactor;
    this.spaceFactor = spaceFactor;
    this.group = inChannels * timeFactor * spaceFactor * spaceFactor / outChannels;
  }

  Tensor apply(Tensor x) {
    if (group == 1 && timeFactor * spaceFactor == 1) {
      return x; // the last stage keeps its width and resolution: the shortcut is the identity
    }
    int pad = (timeFactor - Frames.count(x) % timeFactor) % timeFactor;
    Tensor padded = pad == 0 ? x : backend.pad(x, new int[] {0, 0, 0, 0, pad, 0}, 0f);
    int b = padded.dim(0);
    int c = padded.dim(1);
    int t = padded.dim(2) / timeFactor;
    int h = padded.dim(3) / spaceFactor;
    int w = padded.dim(4) / spaceFactor;
    Tensor folded =
        backend
            .contiguous(padded)
            .reshape(b, c, t, timeFactor, h, spaceFactor, w, spaceFactor)
            .permute(0, 1, 3, 5, 7, 2, 4, 6);
    Tensor grouped =
        backend
            .contiguous(folded)
            .reshape(b, outChannels, group, t, h, w)
            .permute(0, 1, 3, 4, 5, 2);
    Tensor sums = backend.sumLastDim(backend.contiguous(grouped));
    return backend.affine(sums.reshape(b, outChannels, t, h, w), 1f / group, 0f);
  }
}
