package dev.stepweave.models.wan.vae;

/**
 * Spatial tiles for {@link WanVae#decodeTiled}, in output pixels: tiles of {@code minHeight ×
 * minWidth} start every {@code strideHeight × strideWidth}, and neighbours blend over the overlap
 * ({@code min − stride}). Diffusers' defaults are 256/256 with stride 192/192.
 */
public record DecodeTiling(int minHeight, int minWidth, int strideHeight, int strideWidth) {
  public DecodeTiling {
    if (strideHeight <= 0 || strideWidth <= 0) {
      throw new IllegalArgumentException("tile strides must be positive");
    }
    if (strideHeight > minHeight || strideWidth > minWidth) {
      throw new IllegalArgumentException(
          "tile strides "
              + strideHeight
              + "×"
              + strideWidth
              + " exceed the tile size "
              + minHeight
              + "×"
              + minWidth
              + ", leaving gaps");
    }
  }

  /** Diffusers' default tiling. */
  public static DecodeTiling diffusersDefault() {
    return new DecodeTiling(256, 256, 192, 192);
  }
}
