package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Tensor;
import java.util.Objects;

/**
 * One adapter's update of one linear layer, on the model's backend: the low-rank factors, the
 * factor the format folds into them ({@code alpha / rank}; 1 without an alpha), and a bias delta
 * ({@code diff_b}, PEFT's {@code lora_B.bias}) or null.
 *
 * @param down {@code [r, in]}
 * @param up {@code [out, r]}
 * @param alphaScale {@code alpha / r}, applied with the strength
 * @param bias {@code [out]} or null; applied at the strength alone, as PEFT does once the format's
 *     alpha is folded into the factors
 */
public record LayerUpdate(Tensor down, Tensor up, float alphaScale, Tensor bias) {
  public LayerUpdate {
    Objects.requireNonNull(down, "down");
    Objects.requireNonNull(up, "up");
  }

  public long byteSize() {
    return down.byteSize() + up.byteSize() + (bias == null ? 0 : bias.byteSize());
  }
}
