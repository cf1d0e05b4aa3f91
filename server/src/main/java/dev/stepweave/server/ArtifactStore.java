package dev.stepweave.server;

import dev.stepweave.media.Mp4Writer;
import dev.stepweave.media.PngWriter;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

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
