package dev.stepweave.models.wan.vae;

/**
 * Spatial tiling of a decode, in output pixels: each latent frame's video is produced in
 * non-overlapping tiles of {@code tileHeight × tileWidth} (the last row and column smaller when the
 * frame does not divide evenly). Each tile also decodes a halo of context around it, so the result
 * equals the untiled decode; the tile size bounds the memory of the high-resolution layers. Both
 * sizes must be multiples of the VAE's spatial compression.
 */
public record DecodeTiling(int tileHeight, int tileWidth) {
  public DecodeTiling {
    if (tileHeight <= 0 || tileWidth <= 0) {
      throw new IllegalArgumentException(
          "tile size " + tileHeight + "×" + tileWidth + " must be positive");
    }
  }

  /** 256 × 256 pixel tiles. */
  public static DecodeTiling standard() {
    return new DecodeTiling(256, 256);
  }
}
