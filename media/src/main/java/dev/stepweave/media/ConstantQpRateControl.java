package dev.stepweave.media;

import org.jcodec.codecs.h264.encode.RateControl;
import org.jcodec.codecs.h264.io.model.SliceType;
import org.jcodec.common.model.Size;

/**
 * Encodes every macroblock of every frame at one quantiser, for quality rather than bitrate.
 * jcodec's default control starts P frames 6 steps coarser (visibly blurrier) and the encoder
 * writes each slice into a buffer of one byte per pixel, so a macroblock that would overrun its
 * share of that buffer (dense noise can) is re-encoded one step coarser, and the following ones
 * step back towards the target as soon as they fit comfortably.
 */
final class ConstantQpRateControl implements RateControl {
  private static final int MAX_QP = 51;

  private final int qp;
  private int bitsPerMacroblock;
  private int raised;
  private boolean justChanged;

  ConstantQpRateControl(int qp) {
    if (qp < 0 || qp > MAX_QP) {
      throw new IllegalArgumentException("H.264 QP must be in [0, 51], got " + qp);
    }
    this.qp = qp;
  }

  @Override
  public int startPicture(Size size, int maxBytes, SliceType sliceType) {
    int macroblocks = ((size.getWidth() + 15) >> 4) * ((size.getHeight() + 15) >> 4);
    bitsPerMacroblock = (int) ((maxBytes * 8L) / macroblocks);
    raised = 0;
    justChanged = false;
    return qp;
  }

  @Override
  public int initialQpDelta() {
    return 0;
  }

  /**
   * Called after each trial encoding of a macroblock with the bits it took; a non-zero answer asks
   * for a re-encoding with the QP moved by that much. A step down is never taken right after a
   * change, so the trials of one macroblock cannot oscillate.
   */
  @Override
  public int accept(int bits) {
    if (bits > bitsPerMacroblock && qp + raised < MAX_QP) {
      raised++;
      justChanged = true;
      return 1;
    }
    if (raised > 0 && !justChanged && bits < bitsPerMacroblock / 2) {
      raised--;
      justChanged = true;
      return -1;
    }
    justChanged = false;
    return 0;
  }
}
