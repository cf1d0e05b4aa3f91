package dev.stepweave.media;

import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import java.util.stream.IntStream;
import org.jcodec.codecs.h264.H264Encoder;
import org.jcodec.common.Codec;
import org.jcodec.common.MuxerTrack;
import org.jcodec.common.VideoCodecMeta;
import org.jcodec.common.VideoEncoder.EncodedFrame;
import org.jcodec.common.io.FileChannelWrapper;
import org.jcodec.common.io.NIOUtils;
import org.jcodec.common.model.ColorSpace;
import org.jcodec.common.model.Packet;
import org.jcodec.common.model.Packet.FrameType;
import org.jcodec.common.model.Size;
import org.jcodec.containers.mp4.boxes.MetaBox;
import org.jcodec.containers.mp4.boxes.MetaValue;
import org.jcodec.containers.mp4.boxes.MovieBox;
import org.jcodec.containers.mp4.boxes.UdtaBox;
import org.jcodec.containers.mp4.boxes.UdtaMetaBox;
import org.jcodec.containers.mp4.muxer.MP4Muxer;

/**
 * Writes {@code [F, H, W, 3]} RGB frames in [0, 1] as an H.264 (Baseline profile, 4:2:0, BT.709
 * limited range) MP4 that browsers and ffmpeg play, in pure Java.
 *
 * <p>Every frame is coded at a constant QP of {@value #QP}: about 40 dB PSNR on smooth content and
 * on grey noise. Colour detail finer than 2×2 pixels is lost to 4:2:0 chroma subsampling, not to
 * the codec: independent per-pixel RGB noise cannot exceed about 13 dB in any 4:2:0 format. Even
 * sizes are kept exactly (the stream is padded to whole macroblocks and cropped on display); 4:2:0
 * cannot represent an odd width or height, so an odd last column or row is dropped.
 */
public final class Mp4Writer {
  /**
   * H.264 quantiser. jcodec 0.2.5's encoder drifts (its reconstruction stops matching what
   * decoders, ffmpeg included, produce) from QP 16 up: a 832×480 gradient clip decodes at 44 dB
   * PSNR for QP 6-12, 42.5 at 14, then 32.7 at 16, 28 at 18-26. 14 is the coarsest safe value.
   */
  static final int QP = 14;

  /**
   * A key frame every 8 frames: groups of pictures are coded in parallel, so the last group's
   * length bounds the write, and an 81-frame clip makes 11 groups (enough for a 16-core host, where
   * 25-frame groups left 4). jcodec's P-frames at this QP save little: 25 frames of 832×480 moving
   * disk over gradients and noise came to 1.51 MB with a key frame every 25, 1.34 MB every 9 and
   * 1.20 MB every 5 (coded on this project's 2-core dev VM).
   */
  static final int KEY_FRAME_INTERVAL = 8;

  private Mp4Writer() {}

  /**
   * Fails fast, before any encoding, with a one-line message naming {@code target} unless an MP4
   * can be written there.
   */
  public static void checkWritable(Path target) throws IOException {
    AtomicOutput.checkFileWritable(target, "video");
  }

  /**
   * Encodes {@code frames} at {@code fps} frames per second into {@code target}, atomically: the
   * file appears complete or not at all, and an existing file is replaced only on success.
   */
  public static void write(Path target, Tensor frames, int fps) throws IOException {
    write(target, frames, fps, null);
  }

  /**
   * {@link #write(Path, Tensor, int)} with {@code metadataJson} (null for none) stored in the
   * movie's {@code udta/meta} box under the key {@value OutputMetadata#KEY}.
   */
  public static void write(Path target, Tensor frames, int fps, String metadataJson)
      throws IOException {
    if (fps < 1) {
      throw new IllegalArgumentException("fps must be >= 1, got " + fps);
    }
    checkWritable(target);
    RgbFrames.requireVideo(frames);
    AtomicOutput.writeFile(target, temporary -> encode(temporary, frames, fps, true, metadataJson));
  }

  static void encode(Path file, Tensor frames, int fps, boolean parallel) throws IOException {
    encode(file, frames, fps, parallel, null);
  }

  /**
   * Encodes the video group of pictures by group of pictures: each group starts with a key frame
   * and references nothing before it, so its frames can be coded apart from the others' — in
   * parallel when {@code parallel} — and muxed in order. Each group's encoder starts as a
   * sequential encoder stands at a key frame, so the file is byte for byte the one a single encoder
   * writes (a test holds this).
   */
  private static void encode(
      Path file, Tensor frames, int fps, boolean parallel, String metadataJson) throws IOException {
    int sourceHeight = frames.dim(1);
    int sourceWidth = frames.dim(2);
    int height = sourceHeight & ~1;
    int width = sourceWidth & ~1;
    if (height == 0 || width == 0) {
      throw new IllegalArgumentException(
          "video frames of " + sourceHeight + "x" + sourceWidth + " are too small for H.264");
    }
    int count = frames.dim(0);
    int groups = (count + KEY_FRAME_INTERVAL - 1) / KEY_FRAME_INTERVAL;
    IntStream indices = IntStream.range(0, groups);
    List<List<EncodedFrame>> coded =
        (parallel ? indices.parallel() : indices)
            .mapToObj(
                g ->
                    encodeGroup(
                        f -> RgbFrames.frame(frames, f),
                        g * KEY_FRAME_INTERVAL,
                        Math.min(count, (g + 1) * KEY_FRAME_INTERVAL),
                        sourceHeight,
                        sourceWidth))
            .toList();
    mux(file, coded, fps, metadataJson, height, width);
  }

  /** Writes coded groups, in order, as the MP4 {@code file}. */
  static void mux(
      Path file,
      List<List<EncodedFrame>> coded,
      int fps,
      String metadataJson,
      int height,
      int width)
      throws IOException {
    try (FileChannelWrapper channel = NIOUtils.writableChannel(file.toFile())) {
      MP4Muxer muxer = MP4Muxer.createMP4MuxerToChannel(channel);
      MuxerTrack track =
          muxer.addVideoTrack(
              Codec.H264,
              VideoCodecMeta.createSimpleVideoCodecMeta(
                  new Size(width, height), ColorSpace.YUV420J));
      int f = 0;
      for (List<EncodedFrame> group : coded) {
        for (EncodedFrame encoded : group) {
          track.addFrame(
              Packet.createPacket(
                  encoded.getData(),
                  f,
                  fps,
                  1,
                  f,
                  encoded.isKeyFrame() ? FrameType.KEY : FrameType.INTER,
                  null));
          f++;
        }
      }
      MovieBox movie = muxer.finalizeHeader();
      if (metadataJson != null) {
        UdtaBox udta = UdtaBox.createUdtaBox();
        MetaBox meta = UdtaMetaBox.createUdtaMetaBox();
        meta.setKeyedMeta(Map.of(OutputMetadata.KEY, MetaValue.createString(metadataJson)));
        udta.add(meta);
        movie.add(udta);
      }
      muxer.storeHeader(movie);
    }
  }

  /**
   * Frames {@code from} to {@code to - 1} (a key frame first), each {@code frameAt(f)} an RGB frame
   * of {@code sourceHeight × sourceWidth}, coded by an encoder of their own.
   */
  static List<EncodedFrame> encodeGroup(
      IntFunction<float[]> frameAt, int from, int to, int sourceHeight, int sourceWidth) {
    GroupEncoder encoder = new GroupEncoder(sourceHeight, sourceWidth);
    List<EncodedFrame> coded = new ArrayList<>(to - from);
    for (int f = from; f < to; f++) {
      coded.add(encoder.encode(frameAt.apply(f)));
    }
    return coded;
  }

  /**
   * One group of pictures' encoder: frames given one at a time, in order, the first coded as a key
   * frame — what {@link #encodeGroup} runs, for a caller whose frames arrive over time.
   */
  static final class GroupEncoder {
    private final int sourceHeight;
    private final int sourceWidth;
    private final int height;
    private final int width;
    private final H264Encoder encoder = new Bt709H264Encoder(new ConstantQpRateControl(QP));
    private final ByteBuffer out;

    GroupEncoder(int sourceHeight, int sourceWidth) {
      this.sourceHeight = sourceHeight;
      this.sourceWidth = sourceWidth;
      this.height = sourceHeight & ~1;
      this.width = sourceWidth & ~1;
      encoder.setKeyInterval(KEY_FRAME_INTERVAL);
      // The encoder caps a frame at one byte per coded pixel; twice that leaves room for the
      // parameter sets and start-code escaping.
      this.out = ByteBuffer.allocate(2 * ((height + 15) & ~15) * ((width + 15) & ~15) + 4096);
    }

    /** The next frame ({@code sourceHeight × sourceWidth} RGB), coded. */
    EncodedFrame encode(float[] rgb) {
      float[] even = cropToEven(rgb, sourceHeight, sourceWidth);
      out.clear();
      EncodedFrame encoded = encoder.encodeFrame(Bt709.toYuv420(even, height, width), out);
      ByteBuffer data = encoded.getData();
      ByteBuffer copy = ByteBuffer.allocate(data.remaining()).put(data.duplicate()).flip();
      return new EncodedFrame(copy, encoded.isKeyFrame());
    }
  }

  private static float[] cropToEven(float[] rgb, int height, int width) {
    if (height % 2 == 0 && width % 2 == 0) {
      return rgb;
    }
    int evenHeight = height & ~1;
    int evenWidth = width & ~1;
    float[] cropped = new float[evenHeight * evenWidth * 3];
    for (int y = 0; y < evenHeight; y++) {
      System.arraycopy(rgb, y * width * 3, cropped, y * evenWidth * 3, evenWidth * 3);
    }
    return cropped;
  }
}
