package dev.stepweave.core.request;

import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/** A named, typed output with provenance. */
public sealed interface Artifact {
  String name();

  Provenance provenance();

  /** The same artifact with other provenance. */
  Artifact withProvenance(Provenance p);

  /**
   * Video frames.
   *
   * @param frames {@code [F, H, W, 3]} F32 in [0, 1] on the CPU
   */
  record VideoArtifact(String name, Tensor frames, int fps, Provenance provenance)
      implements Artifact {
    @Override
    public VideoArtifact withProvenance(Provenance p) {
      return new VideoArtifact(name, frames, fps, p);
    }

    public VideoArtifact {
      requireFrames(frames);
      if (fps < 1) {
        throw new IllegalArgumentException("fps must be >= 1");
      }
    }

    public int frameCount() {
      return frames.dim(0);
    }

    public int height() {
      return frames.dim(1);
    }

    public int width() {
      return frames.dim(2);
    }
  }

  /** One image, {@code [H, W, 3]} F32 in [0, 1] on the CPU. */
  record ImageArtifact(String name, Tensor pixels, Provenance provenance) implements Artifact {
    @Override
    public ImageArtifact withProvenance(Provenance p) {
      return new ImageArtifact(name, pixels, p);
    }

    public ImageArtifact {
      if (pixels.rank() != 3 || pixels.dim(2) != 3) {
        throw new IllegalArgumentException(
            "image must be [H, W, 3], got " + Arrays.toString(pixels.shape()));
      }
    }
  }

  /** Final latents before decoding, {@code [C, F, H, W]}. */
  record LatentArtifact(String name, Tensor latents, Provenance provenance) implements Artifact {
    @Override
    public LatentArtifact withProvenance(Provenance p) {
      return new LatentArtifact(name, latents, p);
    }
  }

  /** How a loop behaved, for training on it ({@link BehaviorRecord}). */
  record BehaviorArtifact(String name, BehaviorRecord record, Provenance provenance)
      implements Artifact {
    @Override
    public BehaviorArtifact withProvenance(Provenance p) {
      return new BehaviorArtifact(name, record, p);
    }
  }

  /** Any other tensor a loop exposes. */
  record TensorArtifact(String name, Tensor tensor, Provenance provenance) implements Artifact {
    @Override
    public TensorArtifact withProvenance(Provenance p) {
      return new TensorArtifact(name, tensor, p);
    }
  }

  private static void requireFrames(Tensor frames) {
    if (frames.rank() != 4 || frames.dim(3) != 3) {
      throw new IllegalArgumentException(
          "video frames must be [F, H, W, 3], got " + Arrays.toString(frames.shape()));
    }
  }
}
