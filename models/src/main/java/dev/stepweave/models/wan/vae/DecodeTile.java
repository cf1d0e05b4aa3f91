package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Tensor;

/**
 * One tile of a decode, in latent cells: the region of the frame whose video it produces, and the
 * larger region of global features (the output plus a halo, clipped at the frame border) that its
 * local decoder sees.
 */
record DecodeTile(DecodeTile.Region output, DecodeTile.Region input) {
  private static final int HEIGHT = 3;
  private static final int WIDTH = 4;

  /** A rectangle of latent cells. */
  record Region(int top, int left, int height, int width) {}

  /** This tile's input region of {@code features [B, C, t, H', W']} (a view). */
  Tensor inputOf(Tensor features) {
    return features
        .slice(HEIGHT, input.top, input.top + input.height)
        .slice(WIDTH, input.left, input.left + input.width);
  }

  /**
   * The output region of {@code video}, the local decoder's result for {@link #inputOf} ({@code
   * compression} pixels per latent cell), as a view.
   */
  Tensor outputOf(Tensor video, int compression) {
    int top = (output.top - input.top) * compression;
    int left = (output.left - input.left) * compression;
    return video
        .slice(HEIGHT, top, top + output.height * compression)
        .slice(WIDTH, left, left + output.width * compression);
  }
}
