package dev.stepweave.cli.bench;

import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineStats;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.core.runtime.RequestHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Semaphore;

/**
 * Serves a list of requests on a fresh engine and measures it. Clients form a closed loop: at most
 * {@code concurrency} requests are outstanding, and a finished one lets the next be submitted (with
 * concurrency ≥ the request count, everything is submitted at t=0).
 */
public final class ServingRun {
  private ServingRun() {}

  public static RunResult serve(
      ModelInstance model, ServingMode mode, List<Request> requests, int concurrency)
      throws InterruptedException {
    if (concurrency < 1) {
      throw new IllegalArgumentException("concurrency must be >= 1, got " + concurrency);
    }
    int n = requests.size();
    long[] submitted = new long[n];
    long[] finished = new long[n];
    List<CompletableFuture<GenerationResult>> done = new ArrayList<>();
    Semaphore outstanding = new Semaphore(concurrency);
    try (Engine engine = new Engine(model, mode.config())) {
      long start = System.nanoTime();
      for (int i = 0; i < n; i++) {
        outstanding.acquire();
        int index = i;
        submitted[i] = System.nanoTime();
        RequestHandle handle = engine.submit(requests.get(i));
        // Joining the future whenComplete returns orders these writes before the reads below.
        done.add(
            handle
                .result()
                .whenComplete(
                    (result, error) -> {
                      finished[index] = System.nanoTime();
                      outstanding.release();
                    }));
      }
      List<float[]> outputs = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        try {
          outputs.add(pixels(done.get(i).join()));
        } catch (CompletionException e) {
          throw new IllegalStateException(
              "request " + requests.get(i).id() + " failed: " + e.getCause().getMessage(), e);
        }
      }
      EngineStats stats = engine.stats();
      long end = 0;
      List<Duration> latencies = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        latencies.add(Duration.ofNanos(finished[i] - submitted[i]));
        end = Math.max(end, finished[i]);
      }
      return new RunResult(mode, Duration.ofNanos(end - start), latencies, outputs, stats);
    }
  }

  /** The decoded pixels of a finished request: its image, else its video frames. */
  private static float[] pixels(GenerationResult result) {
    for (Artifact a : result.artifacts()) {
      if (a instanceof Artifact.ImageArtifact image) {
        return image.pixels().toFloatArray();
      }
      if (a instanceof Artifact.VideoArtifact video) {
        return video.frames().toFloatArray();
      }
    }
    throw new IllegalStateException("request " + result.requestId() + " returned no pixels");
  }
}
