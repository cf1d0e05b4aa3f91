package dev.stepweave.models.wan;

import dev.stepweave.tensor.Tensor;

/**
 * A cheap look at latents during denoising: the last latent frame's first three channels, each
 * stretched to [0, 1]. It shows structure emerging; it is not a VAE decode.
 */
final class LatentPreview {
  private LatentPreview() {}

  /**
   * @param latents {@code [1, C, F, H, W]} on the CPU
   * @return {@code [H, W, 3]} in [0, 1]
   */
  static Tensor lastFrame(Tensor latents) {
    int f = latents.dim(2);
    int h = latents.dim(3);
    int w = latents.dim(4);
    float[] out = new float[h * w * 3];
    for (int c = 0; c < 3 && c < latents.dim(1); c++) {
      float[] plane = latents.select(0, 0).select(0, c).select(0, f - 1).toFloatArray();
      float min = Float.POSITIVE_INFINITY;
      float max = Float.NEGATIVE_INFINITY;
      for (float v : plane) {
        min = Math.min(min, v);
        max = Math.max(max, v);
      }
      float range = max > min ? max - min : 1f;
      for (int i = 0; i < plane.length; i++) {
        out[i * 3 + c] = (plane[i] - min) / range;
      }
    }
    return Tensor.of(out, h, w, 3);
  }
}
