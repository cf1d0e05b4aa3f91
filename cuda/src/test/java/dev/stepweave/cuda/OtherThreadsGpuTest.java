package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A caller reading results on its own thread while the engine's thread works on: the engine gives
 * the allocator's cache back after each request while the caller's download takes a block from it
 * (the race behind the golden pipeline check's intermittent "cuMemcpyDtoH_v2 ...
 * CUDA_ERROR_INVALID_VALUE" on 80 GB cards), and a download during another thread's graph recording
 * waits for it instead of failing or joining the graph.
 */
@Tag("gpu")
class OtherThreadsGpuTest {

  @Test
  void downloadsOnOneThreadSurviveTheCacheGivenBackOnAnother() throws Exception {
    CudaBackend gpu = Gpu.backend();
    Tensor host = RandomWeights.uniform(11, 1f, 64, 1000);
    // A view, so each download makes a contiguous device copy first: a block from the cache.
    Tensor result = gpu.upload(host, DType.F32).transpose(0, 1);
    float[] expected = host.transpose(0, 1).toFloatArray();
    AtomicBoolean done = new AtomicBoolean();
    AtomicInteger trims = new AtomicInteger();
    CompletableFuture<Void> engine =
        CompletableFuture.runAsync(
            () -> {
              // The engine thread: steps that fill the cache with blocks of the download's size
              // class and others, each followed by giving every cached block back.
              while (!done.get()) {
                List<Tensor> temporaries = new ArrayList<>();
                for (int i = 0; i < 24; i++) {
                  temporaries.add(gpu.zeros(DType.F32, 64, 1000 + (i % 3) * 512));
                }
                temporaries.forEach(gpu.tensors()::release);
                gpu.trim(0); // what the engine does after a request (keeping 8 GB there)
                trims.incrementAndGet();
              }
            });
    try {
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
      int downloads = 0;
      while (System.nanoTime() < until) {
        assertArrayEquals(expected, gpu.download(result).toFloatArray(), "download " + downloads);
        downloads++;
      }
      System.out.printf(
          "  %d downloads on the test thread, %d cache releases on the other%n",
          downloads, trims.get());
      assertTrue(trims.get() > 10, "the other thread gave the cache back " + trims + " times");
    } finally {
      done.set(true);
      engine.get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void aDownloadWaitsForAnotherThreadsGraphRecording() throws Exception {
    CudaBackend gpu = Gpu.backend();
    Tensor input = gpu.upload(RandomWeights.uniform(12, 1f, 256, 256), DType.F32);
    Tensor other = RandomWeights.uniform(13, 1f, 128, 96);
    Tensor otherOnDevice = gpu.upload(other, DType.F32);
    CountDownLatch recording = new CountDownLatch(1);
    AtomicBoolean stillRecording = new AtomicBoolean();
    GraphKey key =
        GraphKey.of("probe", "other-threads", "x", "STEP", "f32", "single", List.of(input));
    CompletableFuture<Tensor> recorder =
        CompletableFuture.supplyAsync(
            () ->
                gpu.replayable(
                    key,
                    List.of(input),
                    in -> {
                      Tensor y = gpu.silu(gpu.affine(in.getFirst(), 2f, 0.5f));
                      if (gpu.context().isCapturing()) {
                        // Hold the recording open while the test thread asks for a download.
                        stillRecording.set(true);
                        recording.countDown();
                        sleep(400);
                        y = gpu.affine(y, 3f, -1f);
                        stillRecording.set(false);
                        return y;
                      }
                      return gpu.affine(y, 3f, -1f);
                    }));
    try {
      assertTrue(recording.await(60, TimeUnit.SECONDS), "the graph began recording");
      float[] downloaded = gpu.download(otherOnDevice).toFloatArray();
      assertFalse(stillRecording.get(), "the download returned while the graph was recording");
      assertArrayEquals(other.toFloatArray(), downloaded);
      Tensor eager = recorder.get(60, TimeUnit.SECONDS);
      float[] expected = gpu.download(eager).toFloatArray();
      // The recording holds only its own body's work: a replay computes what the eager run did.
      long recordings = gpu.graphStats().recordings();
      float[] replayed =
          gpu.download(
                  gpu.replayable(
                      key,
                      List.of(input),
                      in -> gpu.affine(gpu.silu(gpu.affine(in.getFirst(), 2f, 0.5f)), 3f, -1f)))
              .toFloatArray();
      assertEquals(recordings, gpu.graphStats().recordings(), "the second call replays");
      assertArrayEquals(expected, replayed);
    } finally {
      gpu.clearGraphs();
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
