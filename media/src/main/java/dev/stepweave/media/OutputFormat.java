package dev.stepweave.media;

import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The file formats generated media can be written in, told by the output file's extension. Each
 * carries a JSON metadata document ({@link OutputMetadata}) beside the pixels.
 *
 * <p>Not offered: WebP (ImageIO and the TwelveMonkeys plugin only read it) and WebM (jcodec 0.2.5
 * has a VP8 encoder and a Matroska muxer, but no test here shows their output plays).
 */
public enum OutputFormat {
  /** H.264 MP4 ({@link Mp4Writer}); metadata in {@code moov/udta/meta}. */
  MP4("mp4", false),
  /** Animated GIF ({@link GifWriter}, 256 colours a frame); metadata in a comment extension. */
  GIF("gif", false),
  /** One frame as PNG ({@link PngWriter}); metadata in an {@code iTXt} chunk. */
  PNG("png", true);

  private final String extension;
  private final boolean oneFrame;

  OutputFormat(String extension, boolean oneFrame) {
    this.extension = extension;
    this.oneFrame = oneFrame;
  }

  /** The file extension, without the dot. */
  public String extension() {
    return extension;
  }

  /** Whether the format holds exactly one frame. */
  public boolean oneFrame() {
    return oneFrame;
  }

  /**
   * The format {@code file}'s extension names.
   *
   * @throws IllegalArgumentException naming the extension (or its absence) and the formats offered
   */
  public static OutputFormat forFile(Path file) {
    String ext = extensionOf(file).orElse(null);
    for (OutputFormat f : values()) {
      if (f.extension.equals(ext)) {
        return f;
      }
    }
    String offered =
        Arrays.stream(values()).map(f -> "." + f.extension).collect(Collectors.joining(", "));
    String why =
        switch (ext) {
          case null -> "has no extension";
          case "webp" -> "is .webp, which Stepweave cannot encode";
          case "webm" -> "is .webm, which Stepweave does not encode";
          default -> "has unknown extension ." + ext;
        };
    throw new IllegalArgumentException(
        "output " + file + " " + why + " (formats: " + offered + ")");
  }

  /** The lower-cased extension of {@code file}'s name, without the dot; empty without one. */
  static Optional<String> extensionOf(Path file) {
    Path name = file.getFileName();
    String s = name == null ? "" : name.toString();
    int dot = s.lastIndexOf('.');
    return dot <= 0 || dot == s.length() - 1
        ? Optional.empty()
        : Optional.of(s.substring(dot + 1).toLowerCase(Locale.ROOT));
  }

  /** Fails fast with a one-line message naming {@code target} unless it can be written. */
  public void checkWritable(Path target) throws IOException {
    AtomicOutput.checkFileWritable(target, oneFrame ? "image" : "video");
  }

  /**
   * Writes {@code [F, H, W, 3]} RGB frames in [0, 1] with their metadata, atomically.
   *
   * @param metadataJson a JSON object, stored verbatim
   * @throws IllegalArgumentException for more than one frame in a one-frame format
   */
  public void write(Path target, Tensor frames, int fps, String metadataJson) throws IOException {
    RgbFrames.requireVideo(frames);
    switch (this) {
      case MP4 -> Mp4Writer.write(target, frames, fps, metadataJson);
      case GIF -> GifWriter.write(target, frames, fps, metadataJson);
      case PNG -> {
        if (frames.dim(0) != 1) {
          throw new IllegalArgumentException(
              "a ." + extension + " holds one frame, got " + frames.dim(0));
        }
        PngWriter.writeImage(target, frames.select(0, 0), metadataJson);
      }
    }
  }
}
