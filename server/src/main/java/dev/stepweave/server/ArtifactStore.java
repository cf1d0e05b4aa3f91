package dev.stepweave.server;

import dev.stepweave.media.Mp4Writer;
import dev.stepweave.media.PngWriter;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

/**
 * The directory finished outputs live in. Files are named by job id only, ids are checked against
 * their pattern, and every resolved path is checked to stay under the root.
 */
final class ArtifactStore {
  private final Path root;

  ArtifactStore(Path root) throws IOException {
    Files.createDirectories(root);
    this.root = root.toRealPath();
  }

  static ArtifactStore temporary() throws IOException {
    return new ArtifactStore(Files.createTempDirectory("stepweave-artifacts-"));
  }

  Path root() {
    return root;
  }

  Path videoFile(String jobId) {
    return resolve(jobId, ".mp4");
  }

  Path imageFile(String jobId) {
    return resolve(jobId, ".png");
  }

  /** Where a running video job's latest checkpoint is kept (see {@link CheckpointFiles}). */
  Path checkpointFile(String jobId) {
    return resolve(jobId, CHECKPOINT);
  }

  /**
   * The suffix of checkpoint files; {@link dev.stepweave.core.runtime.ProgramCheckpoint} names its
   * temp files {@code .checkpoint-*.tmp}.
   */
  static final String CHECKPOINT = ".checkpoint";

  /** The files of the directory, by name (the database's own files among them). */
  List<Path> list() throws IOException {
    try (Stream<Path> s = Files.list(root)) {
      return s.filter(Files::isRegularFile).sorted().toList();
    }
  }

  /** The hex SHA-256 of a file's content. */
  static String sha256(Path file) throws IOException {
    MessageDigest md;
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
    try (InputStream in = new DigestInputStream(Files.newInputStream(file), md)) {
      in.transferTo(OutputStream.nullOutputStream());
    }
    return HexFormat.of().formatHex(md.digest());
  }

  void writeVideo(String jobId, Tensor frames, int fps) throws IOException {
    Mp4Writer.write(videoFile(jobId), frames, fps);
  }

  void writeImage(String jobId, Tensor pixels) throws IOException {
    PngWriter.writeImage(imageFile(jobId), pixels);
  }

  private Path resolve(String jobId, String extension) {
    if (!JobIds.isValid(jobId)) {
      throw new IllegalArgumentException("not a job id: " + jobId);
    }
    Path file = root.resolve(jobId + extension).normalize();
    if (!file.getParent().equals(root)) {
      throw new IllegalArgumentException("artifact path escapes the artifact directory: " + file);
    }
    return file;
  }
}
