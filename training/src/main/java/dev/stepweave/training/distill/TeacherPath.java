package dev.stepweave.training.distill;

import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.BehaviorRecord;
import dev.stepweave.tensor.Tensor;

/**
 * A teacher's sampling trajectory as a path through noise levels, read from its behaviour record.
 *
 * <p>The teacher samples with the Euler sampler, whose update {@code x + (σ' − σ)·v} moves the
 * latents on a straight line between two of its noise levels; so the record's latents before each
 * step, joined by straight lines, are exactly the path the teacher took, and the path's point at
 * any σ between two of its levels is their interpolation. That is what lets a student with other
 * (fewer) noise levels be taught the teacher's path at its own levels.
 */
final class TeacherPath {
  private final float[] sigmas;
  private final float[][] latents;
  private final int[] shape;

  /**
   * @throws IllegalArgumentException unless the record is a {@link BehaviorCapture#TRAJECTORY} one
   */
  TeacherPath(BehaviorRecord teacher) {
    if (teacher.capture() != BehaviorCapture.TRAJECTORY) {
      throw new IllegalArgumentException(
          "distillation needs the teacher's whole trajectory: capture "
              + BehaviorCapture.TRAJECTORY.wireName()
              + ", not "
              + teacher.capture().wireName());
    }
    this.sigmas = teacher.sigmas();
    this.latents = new float[sigmas.length][];
    for (int i = 0; i < sigmas.length; i++) {
      latents[i] = teacher.latents().get(i).toFloatArray();
    }
    this.shape = teacher.latents().getFirst().shape();
  }

  /** The path's latents at noise level {@code sigma}, within the teacher's first and last. */
  Tensor at(float sigma) {
    int last = sigmas.length - 1;
    if (sigma > sigmas[0] || sigma < sigmas[last]) {
      throw new IllegalArgumentException(
          "noise level "
              + sigma
              + " is outside the teacher's ["
              + sigmas[last]
              + ", "
              + sigmas[0]
              + "]");
    }
    int i = 0;
    while (i < last - 1 && sigmas[i + 1] > sigma) {
      i++;
    }
    float span = sigmas[i] - sigmas[i + 1];
    float w = span == 0 ? 0 : (sigmas[i] - sigma) / span;
    float[] a = latents[i];
    float[] b = latents[i + 1];
    float[] out = new float[a.length];
    for (int e = 0; e < a.length; e++) {
      out[e] = a[e] + w * (b[e] - a[e]);
    }
    return Tensor.of(out, shape);
  }
}
