package dev.stepweave.cli;

import dev.stepweave.media.ImageDecoder;
import dev.stepweave.media.Mp4Reader;
import dev.stepweave.training.data.ClipDecoder;
import dev.stepweave.training.data.RgbClip;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * A dataset entry's media decoded by the media module: a directory of PNG frames (in name order,
 * all one size), an H.264 MP4 (as {@link Mp4Reader} reads what Stepweave writes), or one PNG, JPEG
 * or WebP image as a single frame.
 */
final class MediaClips implements ClipDecoder {
  @Override
  public RgbClip decode(Path media) throws IOException {
    if (Files.isDirectory(media)) {
      return frames(media);
    }
    if (media.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".mp4")) {
      return RgbClip.fromFrames(Mp4Reader.read(media).frames());
    }
    ImageDecoder.Decoded image = ImageDecoder.decode(Files.readAllBytes(media), media.toString());
    return new RgbClip(1, image.height(), image.width(), image.rgb());
  }

  private static RgbClip frames(Path dir) throws IOException {
    List<Path> files;
    try (Stream<Path> all = Files.list(dir)) {
      files =
          all.filter(f -> f.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".png"))
              .sorted()
              .toList();
    }
    if (files.isEmpty()) {
      throw new IOException(dir + ": no PNG frames");
    }
    ImageDecoder.Decoded first = null;
    byte[] rgb = null;
    for (int f = 0; f < files.size(); f++) {
      Path file = files.get(f);
      ImageDecoder.Decoded frame = ImageDecoder.decode(Files.readAllBytes(file), file.toString());
      if (first == null) {
        first = frame;
        rgb = new byte[files.size() * frame.rgb().length];
      } else if (frame.width() != first.width() || frame.height() != first.height()) {
        throw new IOException(
            file
                + ": "
                + frame.width()
                + "x"
                + frame.height()
                + ", but the clip's first frame is "
                + first.width()
                + "x"
                + first.height());
      }
      System.arraycopy(frame.rgb(), 0, rgb, f * frame.rgb().length, frame.rgb().length);
    }
    return new RgbClip(files.size(), first.height(), first.width(), rgb);
  }
}
