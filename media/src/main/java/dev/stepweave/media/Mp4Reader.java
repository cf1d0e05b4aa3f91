package dev.stepweave.media;

import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntUnaryOperator;
import org.jcodec.codecs.h264.H264Decoder;
import org.jcodec.common.Codec;
import org.jcodec.common.DemuxerTrack;
import org.jcodec.common.DemuxerTrackMeta;
import org.jcodec.common.io.FileChannelWrapper;
import org.jcodec.common.io.NIOUtils;
import org.jcodec.common.model.ColorSpace;
import org.jcodec.common.model.Packet;
import org.jcodec.common.model.Picture;
import org.jcodec.common.model.Size;
import org.jcodec.containers.mp4.demuxer.MP4Demuxer;

/**
 * Decodes an H.264 MP4 as written by {@link Mp4Writer} back to RGB frames, for tests, quality
 * checks and the server's thumbnails. It reads BT.709 limited range (what the writer labels its
 * streams with) and expects a constant frame rate.
 */
public final class Mp4Reader {
  /**
   * @param frames {@code [F, H, W, 3]} F32 in [0, 1] on the CPU
   * @param fps frames per second the file declares
   */
  public record Video(Tensor frames, int fps) {}

  private Mp4Reader() {}

  public static Video read(Path file) throws IOException {
    List<float[]> frames = new ArrayList<>();
    Decoded d = decode(file, total -> Integer.MAX_VALUE, f -> frames.add(f.rgb()));
    return new Video(stack(frames, d.height(), d.width()), d.fps());
  }

  /**
   * The middle frame ({@code count / 2}) as {@code [H, W, 3]} F32 in [0, 1]: the frames before it
   * are decoded (H.264 predicts from them) but not kept, so a long video costs no more memory than
   * one frame.
   */
  public static Tensor middleFrame(Path file) throws IOException {
    float[][] kept = new float[1][];
    // Decoding stops after the middle frame, so the last one handed over is it.
    Decoded d = decode(file, total -> total / 2, f -> kept[0] = f.rgb());
    return Tensor.of(kept[0], d.height(), d.width(), 3);
  }

  /**
   * One decoded frame.
   *
   * @param index its position, from 0
   * @param count the file's frame count
   * @param rgb {@code height × width × 3} in [0, 1], row-major; a fresh array the sink may keep
   */
  public record Frame(int index, int count, int height, int width, float[] rgb) {}

  /**
   * Decodes every frame in order and hands each to {@code sink} as it comes, so a caller that keeps
   * little (a contact sheet, a statistic) holds one frame at a time, whatever the video's length.
   */
  public static void forEachFrame(Path file, Consumer<Frame> sink) throws IOException {
    decode(file, total -> Integer.MAX_VALUE, sink);
  }

  private record Decoded(int height, int width, int fps) {}

  /**
   * Decodes frames in order up to index {@code lastOf(frame count)}, handing each to {@code sink}.
   */
  private static Decoded decode(Path file, IntUnaryOperator lastOf, Consumer<Frame> sink)
      throws IOException {
    try (FileChannelWrapper channel = NIOUtils.readableChannel(file.toFile())) {
      MP4Demuxer demuxer = MP4Demuxer.createMP4Demuxer(channel);
      if (demuxer.getVideoTracks().isEmpty()) {
        throw new IOException(file + " has no video track");
      }
      DemuxerTrack track = demuxer.getVideoTracks().getFirst();
      DemuxerTrackMeta meta = track.getMeta();
      if (meta.getCodec() != Codec.H264) {
        throw new IOException(file + " holds " + meta.getCodec() + " video, not H.264");
      }
      int total = meta.getTotalFrames();
      int last = lastOf.applyAsInt(total);
      H264Decoder decoder = H264Decoder.createH264DecoderFromCodecPrivate(meta.getCodecPrivate());
      Size size = meta.getVideoCodecMeta().getSize();
      int codedWidth = (size.getWidth() + 15) & ~15;
      int codedHeight = (size.getHeight() + 15) & ~15;
      int count = 0;
      int height = 0;
      int width = 0;
      int fps = 0;
      for (Packet packet = track.nextFrame();
          packet != null && count <= last;
          packet = track.nextFrame()) {
        if (fps == 0) {
          fps = Math.toIntExact(Math.round((double) packet.getTimescale() / packet.getDuration()));
        }
        // A fresh buffer each time: the decoder keeps earlier pictures as references.
        Picture decoded =
            decoder.decodeFrame(
                packet.getData(),
                Picture.create(codedWidth, codedHeight, ColorSpace.YUV420).getData());
        if (decoded == null) {
          throw new IOException(file + ": frame " + count + " could not be decoded");
        }
        height = decoded.getCroppedHeight();
        width = decoded.getCroppedWidth();
        sink.accept(new Frame(count, total, height, width, Bt709.toRgb(decoded)));
        count++;
      }
      if (count == 0) {
        throw new IOException(file + " has no video frames");
      }
      return new Decoded(height, width, fps);
    }
  }

  private static Tensor stack(List<float[]> frames, int height, int width) {
    int frameSize = height * width * 3;
    float[] all = new float[frames.size() * frameSize];
    for (int f = 0; f < frames.size(); f++) {
      System.arraycopy(frames.get(f), 0, all, f * frameSize, frameSize);
    }
    return Tensor.of(all, frames.size(), height, width, 3);
  }
}
