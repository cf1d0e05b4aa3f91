package dev.stepweave.models.sampling;

import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * Everything a sampler carries from one step of one generation to the next. Immutable: a step
 * returns a new state, so any state can be kept, copied or resumed.
 *
 * <p>{@link #tensors()} and {@link #scalars()} are its serialised form (tensors plus small numbers,
 * as a safetensors file with string metadata holds them); {@link #restore} reads it back.
 *
 * @param schedule the timesteps and sigmas of this generation
 * @param stepIndex the step to run next ({@code schedule.steps()} when finished)
 * @param history recent converted model outputs (data predictions), oldest first, at most the
 *     solver order; multistep samplers extrapolate from them
 * @param lastSample the sample the previous step started from, which the corrector revisits; null
 *     before the first step and for single-step samplers
 * @param lowerOrderCount steps taken so far, capped at the solver order: the warm-up that limits
 *     the order of the first steps
 * @param lastOrder the order the previous step's predictor used (the corrector runs at that order);
 *     0 before the first step
 * @param noiseSeed the seed of a stochastic sampler's per-step noise (the request's seed; unused by
 *     the deterministic samplers)
 */
public record SamplerState(
    SamplerSchedule schedule,
    int stepIndex,
    List<Tensor> history,
    Tensor lastSample,
    int lowerOrderCount,
    int lastOrder,
    long noiseSeed) {

  private static final String TIMESTEPS = "timesteps";
  private static final String SIGMAS = "sigmas";
  private static final String HISTORY = "history.";
  private static final String LAST_SAMPLE = "last_sample";
  private static final String STEP_INDEX = "step_index";
  private static final String HISTORY_SIZE = "history_size";
  private static final String LOWER_ORDER_COUNT = "lower_order_count";
  private static final String LAST_ORDER = "last_order";
  private static final String NOISE_SEED = "noise_seed";

  public SamplerState {
    if (stepIndex < 0 || stepIndex > schedule.steps()) {
      throw new IllegalArgumentException(
          "step index " + stepIndex + " outside a " + schedule.steps() + "-step schedule");
    }
    if (lowerOrderCount < 0 || lastOrder < 0) {
      throw new IllegalArgumentException("negative order counters in sampler state");
    }
    if (lastSample != null && (lastOrder < 1 || history.size() < lastOrder)) {
      throw new IllegalArgumentException(
          "sampler state has a last sample but order "
              + lastOrder
              + " with "
              + history.size()
              + " model outputs");
    }
    history = List.copyOf(history);
  }

  /** The state before the first step; a stochastic sampler draws its noise from {@code seed}. */
  public static SamplerState initial(SamplerSchedule schedule, long noiseSeed) {
    return new SamplerState(schedule, 0, List.of(), null, 0, 0, noiseSeed);
  }

  /** The state after one more step of a sampler that keeps no history. */
  public SamplerState advanced() {
    return new SamplerState(schedule, stepIndex + 1, history, null, 0, 0, noiseSeed);
  }

  public boolean isFinished() {
    return stepIndex == schedule.steps();
  }

  /** The timestep the model is evaluated at for the next step. */
  public float timestep() {
    if (isFinished()) {
      throw new IllegalStateException("the sampler has run all " + schedule.steps() + " steps");
    }
    return schedule.timestep(stepIndex);
  }

  /** The tensors of the serialised form, by name (on whatever device they live). */
  public Map<String, Tensor> tensors() {
    Map<String, Tensor> out = new LinkedHashMap<>();
    out.put(TIMESTEPS, Tensor.of(schedule.timesteps(), schedule.steps()));
    out.put(SIGMAS, Tensor.of(schedule.sigmas(), schedule.steps() + 1));
    for (int i = 0; i < history.size(); i++) {
      out.put(HISTORY + i, history.get(i));
    }
    if (lastSample != null) {
      out.put(LAST_SAMPLE, lastSample);
    }
    return out;
  }

  /** The small numbers of the serialised form, as strings (safetensors metadata). */
  public Map<String, String> scalars() {
    Map<String, String> out = new LinkedHashMap<>();
    out.put(STEP_INDEX, Integer.toString(stepIndex));
    out.put(HISTORY_SIZE, Integer.toString(history.size()));
    out.put(LOWER_ORDER_COUNT, Integer.toString(lowerOrderCount));
    out.put(LAST_ORDER, Integer.toString(lastOrder));
    out.put(NOISE_SEED, Long.toString(noiseSeed));
    return out;
  }

  /**
   * Rebuilds a state from {@link #tensors()} and {@link #scalars()}, host tensors as a checkpoint
   * holds them: the schedule is read on the host, the history and last sample go through {@code
   * toDevice} onto the sampler's backend.
   *
   * @throws IllegalArgumentException naming the missing or malformed entry
   */
  public static SamplerState restore(
      Map<String, Tensor> tensors, Map<String, String> scalars, UnaryOperator<Tensor> toDevice) {
    SamplerSchedule schedule =
        new SamplerSchedule(
            require(tensors, TIMESTEPS).toFloatArray(), require(tensors, SIGMAS).toFloatArray());
    int historySize = integer(scalars, HISTORY_SIZE);
    List<Tensor> history = new ArrayList<>(historySize);
    for (int i = 0; i < historySize; i++) {
      history.add(toDevice.apply(require(tensors, HISTORY + i)));
    }
    Tensor last = tensors.get(LAST_SAMPLE);
    return new SamplerState(
        schedule,
        integer(scalars, STEP_INDEX),
        history,
        last == null ? null : toDevice.apply(last),
        integer(scalars, LOWER_ORDER_COUNT),
        integer(scalars, LAST_ORDER),
        noiseSeed(scalars));
  }

  /** Checkpoints written before stochastic samplers existed carry no noise seed: 0. */
  private static long noiseSeed(Map<String, String> scalars) {
    String v = scalars.get(NOISE_SEED);
    if (v == null) {
      return 0;
    }
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "sampler state '" + NOISE_SEED + "' is not an integer: " + v);
    }
  }

  private static Tensor require(Map<String, Tensor> tensors, String key) {
    Tensor t = tensors.get(key);
    if (t == null) {
      throw new IllegalArgumentException("sampler state lacks tensor '" + key + "'");
    }
    return t;
  }

  private static int integer(Map<String, String> scalars, String key) {
    String v = scalars.get(key);
    if (v == null) {
      throw new IllegalArgumentException("sampler state lacks '" + key + "'");
    }
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("sampler state '" + key + "' is not an integer: " + v);
    }
  }
}
