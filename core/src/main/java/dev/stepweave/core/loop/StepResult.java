package dev.stepweave.core.loop;

import dev.stepweave.tensor.Tensor;
import java.time.Duration;
import java.util.Map;

/**
 * What one executed work plan produced. A call never changes its request's loop state (calls are
 * pure, see {@link BatchableCall}): state a step computes besides its output — a plugin's new cache
 * slots, a decoder's advanced causal caches — comes back here as the {@code update}, and the loop's
 * {@link Loop#advance} folds it in.
 *
 * @param output the step's main tensor (a model prediction, an encoder chunk, a decoded chunk)
 * @param extras further named tensors the step body returns
 * @param update the loop-specific new state the step computed, or null (the loop that planned the
 *     call knows its type)
 * @param elapsed measured time of the call
 */
public record StepResult(
    Tensor output, Map<String, Tensor> extras, Object update, Duration elapsed) {
  public StepResult {
    extras = Map.copyOf(extras);
  }

  public static StepResult of(Tensor output) {
    return new StepResult(output, Map.of(), null, Duration.ZERO);
  }

  /** A result that also hands its loop the state the step computed. */
  public static StepResult of(Tensor output, Object update) {
    return new StepResult(output, Map.of(), update, Duration.ZERO);
  }

  public StepResult withElapsed(Duration d) {
    return new StepResult(output, extras, update, d);
  }

  /**
   * The step's state update as the type its loop expects.
   *
   * @throws IllegalStateException when the step returned none, or one of another type (a bug)
   */
  public <T> T update(Class<T> type) {
    if (!type.isInstance(update)) {
      throw new IllegalStateException(
          "step result carries "
              + (update == null ? "no state update" : "a " + update.getClass().getSimpleName())
              + ", its loop expects a "
              + type.getSimpleName());
    }
    return type.cast(update);
  }
}
