package dev.stepweave.models.wan;

import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.BehaviorRecord;
import dev.stepweave.models.sampling.Sampler;
import dev.stepweave.models.sampling.SamplerState;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the denoise loop has captured of its behaviour so far (part of its state, serialised with
 * it): host copies of the latents before each step ({@link BehaviorCapture#TRAJECTORY}) and the
 * log-probability of each stochastic step's sample. Immutable; a step returns a longer trace.
 *
 * <p>The latents are the sampler's own samples, the ones the log-probabilities are of (a TI2V
 * request re-imposes its first frame on the forward's input and on the final latents, not here).
 */
record BehaviorTrace(BehaviorCapture level, List<Tensor> latents, List<Double> logProbs) {
  static final BehaviorTrace NONE = new BehaviorTrace(BehaviorCapture.NONE, List.of(), List.of());
  private static final String LATENT = "behavior.latents.";
  private static final String LOG_PROBS = "behavior_log_probs";
  private static final String LEVEL = "behavior";

  BehaviorTrace {
    latents = List.copyOf(latents);
    logProbs = List.copyOf(logProbs);
  }

  /** The trace before the first step, starting from {@code latents} on {@code ops}. */
  static BehaviorTrace start(BehaviorCapture level, Backend ops, Tensor latents) {
    if (level == BehaviorCapture.NONE) {
      return NONE;
    }
    List<Tensor> kept =
        level == BehaviorCapture.TRAJECTORY ? List.of(ops.download(latents)) : List.of();
    return new BehaviorTrace(level, kept, List.of());
  }

  boolean capturing() {
    return level != BehaviorCapture.NONE;
  }

  /** The trace after a sampler step (its sample's log-probability, and the sample itself). */
  BehaviorTrace after(Backend ops, Sampler.SamplerStep step) {
    if (!capturing()) {
      return this;
    }
    List<Double> probs = new ArrayList<>(logProbs);
    step.transition().ifPresent(g -> probs.add(g.meanLogProb(ops, step.sample())));
    List<Tensor> kept = latents;
    if (level == BehaviorCapture.TRAJECTORY) {
      kept = new ArrayList<>(latents);
      kept.add(ops.download(step.sample()));
    }
    return new BehaviorTrace(level, kept, probs);
  }

  /**
   * The record of a finished loop.
   *
   * @param finalLatents the latents the loop hands on (what a FINAL record keeps)
   * @param conditioning the text embeddings by name (what a train forward re-evaluates against)
   */
  BehaviorRecord record(
      String loop,
      long weightsVersion,
      SamplerState sampler,
      Backend ops,
      Tensor finalLatents,
      Map<String, Tensor> conditioning,
      Map<String, String> assumptions) {
    List<Tensor> kept =
        level == BehaviorCapture.TRAJECTORY ? latents : List.of(ops.download(finalLatents));
    Map<String, Tensor> cond = new HashMap<>();
    conditioning.forEach((k, v) -> cond.put(k, ops.download(v)));
    return new BehaviorRecord(
        level,
        loop,
        weightsVersion,
        sampler.schedule().timesteps(),
        sampler.schedule().sigmas(),
        logProbs.stream().mapToDouble(Double::doubleValue).toArray(),
        kept,
        cond,
        assumptions);
  }

  /** The serialised tensors, by name. */
  Map<String, Tensor> tensors() {
    Map<String, Tensor> out = new HashMap<>();
    for (int i = 0; i < latents.size(); i++) {
      out.put(LATENT + i, latents.get(i));
    }
    return out;
  }

  /** The serialised small values, into the loop state's JSON. */
  void writeTo(com.fasterxml.jackson.databind.node.ObjectNode json) {
    json.put(LEVEL, level.wireName());
    var probs = json.putArray(LOG_PROBS);
    logProbs.forEach(probs::add);
  }

  /** A trace back from {@link #tensors()} and {@link #writeTo}. */
  static BehaviorTrace restore(
      Map<String, Tensor> tensors, com.fasterxml.jackson.databind.JsonNode json) {
    var level = json.get(LEVEL);
    if (level == null) {
      return NONE; // a checkpoint from before capture existed
    }
    BehaviorCapture capture =
        BehaviorCapture.valueOf(level.asText().toUpperCase(java.util.Locale.ROOT));
    List<Tensor> kept = new ArrayList<>();
    for (int i = 0; tensors.containsKey(LATENT + i); i++) {
      kept.add(tensors.get(LATENT + i));
    }
    List<Double> probs = new ArrayList<>();
    json.path(LOG_PROBS).forEach(p -> probs.add(p.doubleValue()));
    return new BehaviorTrace(capture, kept, probs);
  }
}
