package dev.stepweave.cli;

import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.media.OutputFormat;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where one output goes and in which format, told by its extension and checked before the model
 * loads: a known extension, one frame for a one-frame format, a writable place, and no existing
 * file unless {@code --force}.
 */
record OutputTarget(Path file, OutputFormat format) {
  static final String OUTPUT = "output";

  /**
   * The checked target for {@code frames} frames at {@code file}.
   *
   * @throws InvalidRequestException ({@value #OUTPUT}) for an unknown extension, a video to a
   *     one-frame format, or an existing file without {@code force}
   * @throws IOException naming the file when it cannot be written there
   */
  static OutputTarget check(Path file, int frames, boolean force) throws IOException {
    OutputFormat format;
    try {
      format = OutputFormat.forFile(file);
    } catch (IllegalArgumentException e) {
      throw new InvalidRequestException(OUTPUT, e.getMessage());
    }
    if (format.oneFrame() && frames != 1) {
      throw new InvalidRequestException(
          OUTPUT,
          "output "
              + file
              + ": a ."
              + format.extension()
              + " holds one frame, the request makes "
              + frames
              + " (use .mp4 or .gif, or --frames 1)");
    }
    if (Files.exists(file) && !force) {
      throw new InvalidRequestException(
          OUTPUT, "output " + file + " exists (--force overwrites it, -o names another file)");
    }
    format.checkWritable(file);
    return new OutputTarget(file, format);
  }

  /** The default output: {@code out.png} for one frame, else {@code out.mp4}. */
  static Path defaultFile(int frames) {
    return Path.of(frames == 1 ? "out.png" : "out.mp4");
  }

  /**
   * The name of prompt {@code index} (from 1) of a batch run with {@code seed}: {@code out.mp4}
   * becomes {@code out-3-seed42.mp4}.
   */
  static Path indexed(Path base, int index, long seed) {
    String name = base.getFileName().toString();
    int dot = name.lastIndexOf('.');
    String stem = dot > 0 ? name.substring(0, dot) : name;
    String ext = dot > 0 ? name.substring(dot) : "";
    return base.resolveSibling(stem + "-" + index + "-seed" + seed + ext);
  }
}
