package dev.stepweave.media;

import org.jcodec.codecs.h264.H264Encoder;
import org.jcodec.codecs.h264.encode.RateControl;
import org.jcodec.codecs.h264.io.model.SeqParameterSet;
import org.jcodec.codecs.h264.io.model.VUIParameters;
import org.jcodec.common.model.Size;

/**
 * jcodec's H.264 encoder with the stream labelled as {@link Bt709} output: limited range, BT.709
 * primaries, transfer and matrix, chroma centred in each 2×2 block. Without the label, players
 * guess (ffmpeg assumes BT.601 for untagged streams) and colours shift.
 */
final class Bt709H264Encoder extends H264Encoder {
  private static final int VIDEO_FORMAT_UNSPECIFIED = 5;
  private static final int BT709 = 1;
  private static final int CHROMA_LOCATION_CENTER = 1;

  Bt709H264Encoder(RateControl rateControl) {
    super(rateControl);
  }

  @Override
  public SeqParameterSet initSPS(Size size) {
    SeqParameterSet sps = super.initSPS(size);
    VUIParameters vui = new VUIParameters();
    vui.videoSignalTypePresentFlag = true;
    vui.videoFormat = VIDEO_FORMAT_UNSPECIFIED;
    vui.videoFullRangeFlag = false;
    vui.colourDescriptionPresentFlag = true;
    vui.colourPrimaries = BT709;
    vui.transferCharacteristics = BT709;
    vui.matrixCoefficients = BT709;
    vui.chromaLocInfoPresentFlag = true;
    vui.chromaSampleLocTypeTopField = CHROMA_LOCATION_CENTER;
    vui.chromaSampleLocTypeBottomField = CHROMA_LOCATION_CENTER;
    sps.vuiParams = vui;
    return sps;
  }
}
