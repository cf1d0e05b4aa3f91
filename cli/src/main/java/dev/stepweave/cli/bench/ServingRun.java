package dev.stepweave.cli.bench;

import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.EngineStats;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.tensor.Tensor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Serves lists of requests on one model, each time on a fresh engine, and measures them. One client
 * thread (the caller's) submits each request when its {@link Arrivals} say it arrives.
 *
 * @param model the loaded model every engine serves
 * @param base the engine configuration the modes start from (budgets, device rates)
 * @param maxBatch running requests and units per call of the batching modes
 */
public record ServingRun(ModelInstance model, EngineConfig base, int maxBatch) {
  public ServingRun {
    if (maxBatch < 1) {
      throw new IllegalArgumentException("the largest batch must be >= 1, got " + maxBatch);
    }
  }

  /**
   * Serves {@code requests} in {@code mode} as they arrive and compares each one's pixels with
   * {@code reference} once all are done.
   */
  public RunResult serve(
      ServingMode mode, List<Request> requests, Arrivals arrivals, OutputReference reference)
      throws InterruptedException {
    int n = requests.size();
    long[] arrived = new long[n];
    long[] finished = new long[n];
    List<CompletableFuture<GenerationResult>> done = new ArrayList<>();
    try (Engine engine = new Engine(model, mode.config(base, maxBatch)).start()) {
      long start = System.nanoTime();
      Arrivals.Pacer pacer = arrivals.pacer(n, start);
      for (int i = 0; i < n; i++) {
        arrived[i] = pacer.awaitArrival(i);
        int index = i;
        // Joining the future whenComplete returns orders these writes before the reads below.
        done.add(
            engine
                .submit(requests.get(i))
                .result()
                .whenComplete(
                    (result, error) -> {
                      finished[index] = System.nanoTime();
                      pacer.finished(index);
                    }));
      }
      List<GenerationResult> results = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        try {
          results.add(done.get(i).join());
        } catch (CompletionException e) {
          throw new IllegalStateException(
              "request " + requests.get(i).id() + " failed: " + e.getCause().getMessage(), e);
        }
      }
      EngineStats stats = engine.stats();
      // Compared only now, so the comparing does not compete with requests still running.
      List<Deviation> deviations = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        deviations.add(reference.compare(mode, requests.get(i).id(), pixels(results.get(i))));
      }
      long end = start;
      List<Duration> latencies = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        latencies.add(Duration.ofNanos(finished[i] - arrived[i]));
        end = Math.max(end, finished[i]);
      }
      return new RunResult(mode, Duration.ofNanos(end - start), latencies, deviations, stats);
    }
  }

  /** The decoded pixels of a finished request: its image, else its video frames. */
  private static Tensor pixels(GenerationResult result) {
    for (Artifact a : result.artifacts()) {
      if (a instanceof Artifact.ImageArtifact image) {
        return image.pixels();
      }
      if (a instanceof Artifact.VideoArtifact video) {
        return video.frames();
      }
    }
    throw new IllegalStateException("request " + result.requestId() + " returned no pixels");
  }
}
