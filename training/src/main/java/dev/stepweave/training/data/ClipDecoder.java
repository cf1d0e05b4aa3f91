package dev.stepweave.training.data;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Turns a dataset entry's media into frames. Files are the products' concern (the plane rules keep
 * codecs out of training), so the command that prepares a dataset passes one built on the media
 * module.
 */
@FunctionalInterface
public interface ClipDecoder {
  /**
   * @param media a directory of PNG frames, an MP4 or one image file
   * @throws IOException or an IllegalArgumentException naming the file that cannot be decoded
   */
  RgbClip decode(Path media) throws IOException;
}
