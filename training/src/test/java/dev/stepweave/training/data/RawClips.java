package dev.stepweave.training.data;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A test-only media format, so the training module's tests need no codec: three big-endian ints
 * (frames, height, width) and the RGB bytes. The products decode real media through {@code media}.
 */
final class RawClips {
  private RawClips() {}

  static void write(Path file, RgbClip clip) throws IOException {
    ByteBuffer header = ByteBuffer.allocate(12);
    header.putInt(clip.frames()).putInt(clip.height()).putInt(clip.width());
    byte[] rgb = clip.bytes();
    byte[] all = Arrays.copyOf(header.array(), 12 + rgb.length);
    System.arraycopy(rgb, 0, all, 12, rgb.length);
    Files.write(file, all);
  }

  static RgbClip read(Path file) throws IOException {
    byte[] all = Files.readAllBytes(file);
    if (all.length < 12) {
      throw new IOException(file + ": shorter than a raw clip's header");
    }
    ByteBuffer b = ByteBuffer.wrap(all);
    int frames = b.getInt();
    int height = b.getInt();
    int width = b.getInt();
    return new RgbClip(frames, height, width, Arrays.copyOfRange(all, 12, all.length));
  }
}
