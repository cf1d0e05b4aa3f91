package dev.stepweave.training.rl;

import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.BehaviorRecord;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.core.runtime.RequestHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A GRPO/NFT group through the serving engine (design §10): K samples of one prompt, differing only
 * in their seed, submitted together with behaviour capture. The engine admits them as ordinary
 * requests, so they share its batcher — K identical shapes and schedules batch into one transformer
 * call per step — and its text-embedding cache, so the prompt is encoded once for the group. There
 * is no sampling loop here: the trainer is a client of the engine.
 */
public final class GroupRollout {
  private GroupRollout() {}

  /**
   * One sample of a group.
   *
   * @param seed its seed
   * @param video what the engine served for it
   * @param behavior how its denoise loop behaved
   */
  public record Sample(long seed, Artifact.VideoArtifact video, BehaviorRecord behavior) {}

  /**
   * Runs a group: {@code template} with seeds {@code firstSeed … firstSeed + k − 1}, each with
   * {@code capture}, ids {@code <template id>-<i>}.
   *
   * @throws IllegalArgumentException for {@code k < 1} or no capture
   * @throws RolloutFailedException naming the sample that failed
   */
  public static List<Sample> run(
      Engine engine,
      Request template,
      int k,
      long firstSeed,
      BehaviorCapture capture,
      Duration timeout) {
    if (k < 1) {
      throw new IllegalArgumentException("a group needs at least one sample, got " + k);
    }
    if (capture == BehaviorCapture.NONE) {
      throw new IllegalArgumentException("a rollout group captures behaviour: FINAL or TRAJECTORY");
    }
    List<Request> members = new ArrayList<>();
    for (int i = 0; i < k; i++) {
      members.add(member(template, i, firstSeed + i, capture));
    }
    // Together: admitted in one tick, the group's steps batch K wide from the first.
    List<RequestHandle> handles = engine.submitAll(members);
    List<Sample> out = new ArrayList<>();
    for (int i = 0; i < k; i++) {
      GenerationResult r;
      try {
        r = handles.get(i).result().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        throw new RolloutFailedException(template.id() + "-" + i, e.getCause());
      } catch (TimeoutException | InterruptedException e) {
        throw new RolloutFailedException(template.id() + "-" + i, e);
      }
      out.add(
          new Sample(
              firstSeed + i,
              r.artifact(Artifact.VideoArtifact.class),
              r.artifact(Artifact.BehaviorArtifact.class).record()));
    }
    return out;
  }

  private static Request member(Request template, int index, long seed, BehaviorCapture capture) {
    return template.toBuilder()
        .id(template.id() + "-" + index)
        .output(template.output().capturing(capture))
        .build()
        .withParams(template.params().withSeed(seed));
  }

  /**
   * Publishes a trained policy's transformer weights into the engine that rolls out ({@link
   * Engine#syncWeights}) and waits until they are in force: the next group rolls out under them.
   *
   * @return the new weights version
   * @throws IllegalStateException when the sync fails or does not complete within {@code timeout}
   */
  public static long publish(
      Engine engine, java.util.Map<String, dev.stepweave.tensor.Tensor> weights, Duration timeout) {
    try {
      return engine
          .syncWeights("transformer", weights)
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw new IllegalStateException("weight sync failed: " + e.getCause().getMessage(), e);
    } catch (TimeoutException | InterruptedException e) {
      throw new IllegalStateException("weight sync did not complete: " + e, e);
    }
  }

  /** A group member that did not complete. */
  public static final class RolloutFailedException extends RuntimeException {
    RolloutFailedException(String member, Throwable cause) {
      super("rollout " + member + " failed: " + cause.getMessage(), cause);
    }
  }
}
