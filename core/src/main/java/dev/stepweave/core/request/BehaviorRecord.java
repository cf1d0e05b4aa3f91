package dev.stepweave.core.request;

import dev.stepweave.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * How one denoise loop behaved, captured while it ran (reconstructing it later is fragile): what a
 * trainer needs to score, re-evaluate or replay the rollout. The artifact's {@link Provenance}
 * carries the rest (model, seed, sampler, steps, guidance, size, precision, backend, adapters).
 *
 * @param capture the level captured
 * @param loop the loop that ran
 * @param weightsVersion the model instance's weights version the loop ran under (one for the whole
 *     loop: a weight swap waits for a step boundary and a loop never straddles versions)
 * @param timesteps the model's conditioning value at each step
 * @param sigmas the sampler's noise levels, one more than the steps (the last is the end)
 * @param logProbs the per-element mean log-probability of each step's drawn sample under the step's
 *     Gaussian, for a stochastic sampler; empty for a deterministic one (there is none to match)
 * @param latents {@link BehaviorCapture#TRAJECTORY}: the latents before each step and the final
 *     ones (steps + 1, host F32); {@link BehaviorCapture#FINAL}: the final latents only
 * @param conditioning the text embeddings the transformer saw, by name ({@code prompt_embeds},
 *     {@code negative_prompt_embeds} under guidance): what a train forward re-evaluates against
 *     (one tensor for a whole group of one prompt, from the engine's text-embedding cache)
 * @param assumptions what the numbers depended on besides the weights: step caches and plugins in
 *     force, attention implementation, determinism
 */
public record BehaviorRecord(
    BehaviorCapture capture,
    String loop,
    long weightsVersion,
    float[] timesteps,
    float[] sigmas,
    double[] logProbs,
    List<Tensor> latents,
    Map<String, Tensor> conditioning,
    Map<String, String> assumptions) {
  /** The conditioning key of the prompt's text embeddings. */
  public static final String PROMPT_EMBEDS = "prompt_embeds";

  /** The conditioning key of the negative prompt's, under guidance. */
  public static final String NEGATIVE_PROMPT_EMBEDS = "negative_prompt_embeds";

  public BehaviorRecord {
    if (capture == BehaviorCapture.NONE) {
      throw new IllegalArgumentException("a behaviour record needs a capture level");
    }
    if (sigmas.length != timesteps.length + 1) {
      throw new IllegalArgumentException(
          timesteps.length + " timesteps need " + (timesteps.length + 1) + " sigmas");
    }
    if (logProbs.length != 0 && logProbs.length != timesteps.length) {
      throw new IllegalArgumentException(
          "log-probabilities for " + logProbs.length + " of " + timesteps.length + " steps");
    }
    int wanted = capture == BehaviorCapture.TRAJECTORY ? timesteps.length + 1 : 1;
    if (latents.size() != wanted) {
      throw new IllegalArgumentException(
          capture.wireName() + " capture needs " + wanted + " latents, got " + latents.size());
    }
    timesteps = timesteps.clone();
    sigmas = sigmas.clone();
    logProbs = logProbs.clone();
    latents = List.copyOf(latents);
    conditioning = Map.copyOf(conditioning);
    assumptions = Map.copyOf(assumptions);
  }

  public int steps() {
    return timesteps.length;
  }

  /** The latents the loop ended with. */
  public Tensor finalLatents() {
    return latents.getLast();
  }

  /** The latents before step {@code i}; a {@link BehaviorCapture#TRAJECTORY} record only. */
  public Tensor latentsBefore(int step) {
    if (capture != BehaviorCapture.TRAJECTORY) {
      throw new IllegalStateException("a " + capture.wireName() + " record keeps no trajectory");
    }
    return latents.get(step);
  }

  /** Bytes the record holds in memory (tensors at 4 bytes an element, and the arrays). */
  public long bytes() {
    long b = 4L * timesteps.length + 4L * sigmas.length + 8L * logProbs.length;
    for (Tensor t : latents) {
      b += 4L * t.numel();
    }
    for (Tensor t : conditioning.values()) {
      b += 4L * t.numel();
    }
    return b;
  }
}
