package dev.stepweave.media;

import org.jcodec.common.model.ColorSpace;
import org.jcodec.common.model.Picture;
import org.jcodec.common.model.Rect;

/**
 * RGB in [0, 1] to and from 8-bit 4:2:0 Y'CbCr with ITU-R BT.709 coefficients in limited (studio)
 * range: Y' in [16, 235], Cb/Cr in [16, 240]. That is what players assume for H.264 unless told
 * otherwise; the writer also says so in the stream (VUI), so browsers and ffmpeg agree with us.
 *
 * <p>Chroma samples sit at the centre of each 2×2 luma block (H.264 chroma location type 1): the
 * encoder averages the block, the decoder interpolates bilinearly between block centres.
 *
 * <p>jcodec stores 8-bit samples as signed bytes offset by -128.
 */
final class Bt709 {
  private static final float KR = 0.2126f;
  private static final float KB = 0.0722f;
  private static final float KG = 1f - KR - KB;
  private static final float PB_SCALE = 2f * (1f - KB);
  private static final float PR_SCALE = 2f * (1f - KR);
  private static final float LUMA_RANGE = 219f;
  private static final float CHROMA_RANGE = 224f;

  private Bt709() {}

  /**
   * Converts one {@code [height, width, 3]} row-major RGB frame into a picture whose planes are
   * padded to whole 16×16 macroblocks by repeating the last row and column (padding that predicts
   * well and is cropped away on display); the crop rectangle is the frame itself.
   *
   * @param height even
   * @param width even
   */
  static Picture toYuv420(float[] rgb, int height, int width) {
    if (height % 2 != 0 || width % 2 != 0) {
      throw new IllegalArgumentException(
          "4:2:0 needs even dimensions, got " + height + "x" + width);
    }
    int codedHeight = roundUpTo16(height);
    int codedWidth = roundUpTo16(width);
    Picture pic =
        Picture.createCropped(
            codedWidth, codedHeight, ColorSpace.YUV420J, new Rect(0, 0, width, height));
    writeChroma(rgb, height, width, pic);
    writeLuma(rgb, height, width, pic);
    padByReplication(pic.getPlaneData(0), codedWidth, codedHeight, width, height);
    padByReplication(pic.getPlaneData(1), codedWidth / 2, codedHeight / 2, width / 2, height / 2);
    padByReplication(pic.getPlaneData(2), codedWidth / 2, codedHeight / 2, width / 2, height / 2);
    return pic;
  }

  /** Each chroma sample is the mean colour difference of its 2×2 block, rounded once. */
  private static void writeChroma(float[] rgb, int height, int width, Picture pic) {
    int chromaWidth = width / 2;
    float[] pb = new float[(height / 2) * chromaWidth];
    float[] pr = new float[pb.length];
    for (int y = 0; y < height; y++) {
      for (int x = 0; x < width; x++) {
        int i = (y * width + x) * 3;
        float r = clamp01(rgb[i]);
        float b = clamp01(rgb[i + 2]);
        float lumaValue = KR * r + KG * clamp01(rgb[i + 1]) + KB * b;
        int block = (y / 2) * chromaWidth + x / 2;
        pb[block] += (b - lumaValue) / PB_SCALE * 0.25f;
        pr[block] += (r - lumaValue) / PR_SCALE * 0.25f;
      }
    }
    int stride = pic.getPlaneWidth(1);
    byte[] cb = pic.getPlaneData(1);
    byte[] cr = pic.getPlaneData(2);
    for (int y = 0; y < height / 2; y++) {
      for (int x = 0; x < chromaWidth; x++) {
        cb[y * stride + x] = sample(128f + CHROMA_RANGE * pb[y * chromaWidth + x]);
        cr[y * stride + x] = sample(128f + CHROMA_RANGE * pr[y * chromaWidth + x]);
      }
    }
  }

  /**
   * Chooses each luma sample to bring the decoded pixel closest to the input in RGB, given the
   * chroma the decoder will interpolate there (the "sharp YUV" idea). Where chroma is smooth this
   * is the plain {@code KR R + KG G + KB B}; at colour edges and in colour noise, where 4:2:0 has
   * to lose detail, it moves part of the lost detail into luma (about +1 dB RGB PSNR).
   */
  private static void writeLuma(float[] rgb, int height, int width, Picture pic) {
    int chromaStride = pic.getPlaneWidth(1);
    float[] pb = upsample(pic.getPlaneData(1), chromaStride, width / 2, height / 2, width, height);
    float[] pr = upsample(pic.getPlaneData(2), chromaStride, width / 2, height / 2, width, height);
    byte[] luma = pic.getPlaneData(0);
    int stride = pic.getPlaneWidth(0);
    for (int y = 0; y < height; y++) {
      for (int x = 0; x < width; x++) {
        int p = y * width + x;
        float rFromChroma = PR_SCALE * pr[p];
        float bFromChroma = PB_SCALE * pb[p];
        float gFromChroma = -(KR * rFromChroma + KB * bFromChroma) / KG;
        // Decoded RGB is luma plus these offsets; the least-squares luma is the mean remainder.
        float lumaValue =
            (clamp01(rgb[p * 3])
                    - rFromChroma
                    + clamp01(rgb[p * 3 + 1])
                    - gFromChroma
                    + clamp01(rgb[p * 3 + 2])
                    - bFromChroma)
                / 3f;
        luma[y * stride + x] = sample(16f + LUMA_RANGE * lumaValue);
      }
    }
  }

  /** Converts the visible (cropped) part of a decoded 4:2:0 picture to {@code [h, w, 3]} RGB. */
  static float[] toRgb(Picture pic) {
    int height = pic.getCroppedHeight();
    int width = pic.getCroppedWidth();
    int lumaStride = pic.getPlaneWidth(0);
    int chromaStride = pic.getPlaneWidth(1);
    int chromaHeight = (height + 1) / 2;
    int chromaWidth = (width + 1) / 2;
    byte[] luma = pic.getPlaneData(0);
    float[] pb =
        upsample(pic.getPlaneData(1), chromaStride, chromaWidth, chromaHeight, width, height);
    float[] pr =
        upsample(pic.getPlaneData(2), chromaStride, chromaWidth, chromaHeight, width, height);
    float[] rgb = new float[height * width * 3];
    for (int y = 0; y < height; y++) {
      for (int x = 0; x < width; x++) {
        int p = y * width + x;
        float lumaValue = (luma[y * lumaStride + x] + 128 - 16f) / LUMA_RANGE;
        float r = lumaValue + PR_SCALE * pr[p];
        float b = lumaValue + PB_SCALE * pb[p];
        float g = (lumaValue - KR * r - KB * b) / KG;
        rgb[p * 3] = clamp01(r);
        rgb[p * 3 + 1] = clamp01(g);
        rgb[p * 3 + 2] = clamp01(b);
      }
    }
    return rgb;
  }

  /**
   * Bilinear interpolation of a half-resolution chroma plane to full resolution, returning the
   * normalised colour difference (Pb or Pr, in [-0.5, 0.5]). Luma column x lies at chroma
   * coordinate x/2 - 1/4, so even columns weigh their own block 3/4 and the left one 1/4, odd
   * columns their own 3/4 and the right one 1/4; rows likewise.
   */
  private static float[] upsample(
      byte[] plane, int stride, int chromaWidth, int chromaHeight, int width, int height) {
    float[] out = new float[width * height];
    for (int y = 0; y < height; y++) {
      int row = y / 2;
      int rowNear = Math.clamp(y % 2 == 0 ? row - 1 : row + 1, 0, chromaHeight - 1);
      for (int x = 0; x < width; x++) {
        int col = x / 2;
        int colNear = Math.clamp(x % 2 == 0 ? col - 1 : col + 1, 0, chromaWidth - 1);
        float top = 0.75f * plane[row * stride + col] + 0.25f * plane[row * stride + colNear];
        float bottom =
            0.75f * plane[rowNear * stride + col] + 0.25f * plane[rowNear * stride + colNear];
        // Stored bytes are sample - 128, which is already centred on zero chroma.
        out[y * width + x] = (0.75f * top + 0.25f * bottom) / CHROMA_RANGE;
      }
    }
    return out;
  }

  private static void padByReplication(
      byte[] plane, int stride, int planeHeight, int width, int height) {
    for (int y = 0; y < planeHeight; y++) {
      int sourceRow = Math.min(y, height - 1) * stride;
      if (y >= height) {
        System.arraycopy(plane, sourceRow, plane, y * stride, width);
      }
      byte last = plane[y * stride + width - 1];
      for (int x = width; x < stride; x++) {
        plane[y * stride + x] = last;
      }
    }
  }

  /** Rounds half up and clamps to 8 bits, stored with jcodec's -128 offset. */
  private static byte sample(float value) {
    return (byte) (Math.clamp(Math.round(value), 0, 255) - 128);
  }

  private static float clamp01(float v) {
    return Math.clamp(v, 0f, 1f);
  }

  private static int roundUpTo16(int n) {
    return (n + 15) & ~15;
  }
}
