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

  /**
   * {@code h + apply(x, firstChunk)}: the stage's output with the shortcut added. Where the repeats
   * are a view of x — each output channel reads one input channel, which holds when the repeats are
   * whole trailing digits of the {@code t × s × s} block — the sum reads x through that broadcast
   * view in one pass, {@code h} viewed as {@code [B, C, T, t, H, s, W, s]}, instead of first
   * copying the repeats and their unfolding (two passes over the stage's full-resolution output).
   * The first chunk, whose unfolded frames lose their first {@code t − 1}, copies.
   */
  Tensor addTo(Tensor h, Tensor x, boolean firstChunk) {
    Tensor view = firstChunk || !x.isContiguous() ? null : broadcastView(x);
    if (view == null) {
      return backend.add(h, apply(x, firstChunk));
    }
    int[] blocks = view.shape();
    Tensor sum = backend.add(backend.contiguous(h).reshape(blocks), view);
    return sum.reshape(h.shape());
  }

  /**
   * x as {@code [B, C, T, t, H, s, W, s]} with each position reading the input channel its repeat
   * comes from, or null when no view says it. Output channel {@code o}'s block position {@code (i,
   * j, k)} (digits of radices {@code (t, s, s)}) reads input channel {@code (o·t·s·s + i·s·s + j·s
   * + k) / repeats}: when {@code repeats} is the product of the last digits' radices, that is
   * {@code o} times the leading digits' product plus their value, so x viewed as {@code [B, C, d0,
   * d1, d2, T, H, W]} (a digit's size where it is leading, 1 where it is dropped) and expanded over
   * the dropped digits is the whole shortcut.
   */
  private Tensor broadcastView(Tensor x) {
    int[] radices = {timeFactor, spaceFactor, spaceFactor};
    int dropped = 1;
    int leading = radices.length;
    while (leading > 0 && dropped < repeats) {
      dropped *= radices[--leading];
    }
    if (dropped != repeats) {
      return null;
    }
    int b = x.dim(0);
    int t = x.dim(2);
    int h = x.dim(3);
    int w = x.dim(4);
    int[] digits = new int[radices.length];
    for (int d = 0; d < radices.length; d++) {
      digits[d] = d < leading ? radices[d] : 1;
    }
    return x.reshape(b, outChannels, digits[0], digits[1], digits[2], t, h, w)
        .permute(0, 1, 5, 2, 6, 3, 7, 4)
        .expand(b, outChannels, t, timeFactor, h, spaceFactor, w, spaceFactor);
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
