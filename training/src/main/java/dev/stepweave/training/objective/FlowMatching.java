package dev.stepweave.training.objective;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/**
 * The rectified-flow (flow-matching) objective Wan is trained with: a clean latent x₀ and noise ε
 * mixed at σ, {@code x_t = (1 − σ)·x₀ + σ·ε}, the model asked at timestep {@code 1000·σ} for the
 * velocity {@code ε − x₀}, the loss the mean squared error over every element. All through the
 * backend, so on a recording backend the loss is differentiable.
 */
public final class FlowMatching {
  /** The training timestep of noise level σ. */
  public static final float TIMESTEP_SCALE = 1000f;

  private FlowMatching() {}

  /**
   * One batch: clean latents and noise {@code [B, C, F, H, W]}, noise levels {@code [B]} in [0, 1]
   * and the text-encoder states {@code [B, S, text_dim]}.
   */
  public record Batch(Tensor x0, Tensor noise, Tensor sigma, Tensor context) {
    public Batch {
      if (!Arrays.equals(x0.shape(), noise.shape())) {
        throw new IllegalArgumentException(
            "noise "
                + Arrays.toString(noise.shape())
                + " must have the latents' shape "
                + Arrays.toString(x0.shape()));
      }
      if (sigma.rank() != 1 || sigma.dim(0) != x0.dim(0)) {
        throw new IllegalArgumentException(
            "sigma " + Arrays.toString(sigma.shape()) + " must be [" + x0.dim(0) + "]");
      }
    }
  }

  /** What the model sees and what it should predict. */
  public record Noised(Tensor xt, Tensor timestep, Tensor target) {}

  public static Noised noised(Backend backend, Batch batch) {
    int[] perSample = new int[batch.x0().rank()];
    Arrays.fill(perSample, 1);
    perSample[0] = batch.x0().dim(0);
    Tensor sigma = batch.sigma().reshape(perSample);
    Tensor xt =
        backend.add(
            backend.mul(backend.affine(sigma, -1f, 1f), batch.x0()),
            backend.mul(sigma, batch.noise()));
    return new Noised(
        xt,
        backend.affine(batch.sigma(), TIMESTEP_SCALE, 0f),
        backend.sub(batch.noise(), batch.x0()));
  }

  /** {@code mean((prediction − target)²)} over every element, as a {@code [1]} tensor. */
  public static Tensor meanSquaredError(Backend backend, Tensor prediction, Tensor target) {
    Tensor diff = backend.sub(prediction, target);
    Tensor squares = backend.unary(backend.contiguous(diff), Backend.UnaryOp.SQUARE);
    long n = squares.numel();
    Tensor sum = backend.sumLastDim(squares.reshape(1, (int) n));
    Tensor mean = backend.affine(sum, (float) (1.0 / n), 0f).reshape(1);
    return mean.dtype() == DType.F32 ? mean : backend.upload(mean, DType.F32);
  }
}
