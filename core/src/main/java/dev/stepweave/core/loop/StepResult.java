package dev.stepweave.core.loop;

import dev.stepweave.tensor.Tensor;
import java.time.Duration;
import java.util.Map;

/**
 * What one executed work plan produced.
 *
 * @param output the step's main tensor (a model prediction, an encoder chunk, a decoded chunk)
 * @param extras further named tensors the step body returns
 * @param elapsed measured time of the call
 */
public record StepResult(Tensor output, Map<String, Tensor> extras, Duration elapsed) {
  public StepResult {
    extras = Map.copyOf(extras);
  }

  public static StepResult of(Tensor output) {
    return new StepResult(output, Map.of(), Duration.ZERO);
  }

  public StepResult withElapsed(Duration d) {
    return new StepResult(output, extras, d);
  }
}
