package dev.stepweave.cuda.memory;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Device→host copies that do not stop the host: each is queued on the stream into a page-locked
 * staging buffer, and a landing thread waits for it there and copies it into the ordinary host
 * tensor the caller already holds, then gives the buffer back. {@link #awaitAll} (part of the
 * backend's synchronisation) returns once every copy queued so far has landed.
 */
final class QueuedDownloads {
  private final CudaContext context;
  private final PinnedHostBuffers pinned;
  private final ExecutorService landing =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "stepweave-download-landing");
            t.setDaemon(true);
            return t;
          });
  private final List<CompletableFuture<Void>> inFlight = new ArrayList<>();

  QueuedDownloads(CudaContext context, PinnedHostBuffers pinned) {
    this.context = context;
    this.pinned = pinned;
  }

  /**
   * A contiguous host tensor of {@code dtype} and {@code shape} that receives the {@code bytes} at
   * device address {@code src} once the work queued so far has run; the source must stay allocated
   * until then (stream order guarantees it: see {@link DeviceTensors#downloadQueued}).
   */
  Tensor queue(long src, DType dtype, int[] shape, long bytes) {
    Tensor host = Tensor.zeros(dtype, shape);
    MemorySegment target = host.segment();
    MemorySegment staging = pinned.borrow(bytes);
    if (staging == null) {
      // No page-locked memory: an ordinary copy, which waits.
      Driver.call(
          "cuMemcpyDtoH_v2", () -> (int) Driver.cuMemcpyDtoH_v2.invokeExact(target, src, bytes));
      return host;
    }
    long stream = context.stream();
    Driver.call(
        "cuMemcpyDtoHAsync_v2",
        () -> (int) Driver.cuMemcpyDtoHAsync_v2.invokeExact(staging, src, bytes, stream));
    long event = context.recordEvent();
    CompletableFuture<Void> landed =
        CompletableFuture.runAsync(
            () -> {
              try {
                context.awaitEvent(event);
                MemorySegment.copy(staging, 0, target, 0, bytes);
              } finally {
                pinned.giveBack(staging);
              }
            },
            landing);
    synchronized (inFlight) {
      inFlight.add(landed);
    }
    return host;
  }

  /** Waits until every copy queued so far has landed; a failed one throws here. */
  void awaitAll() {
    List<CompletableFuture<Void>> waiting;
    synchronized (inFlight) {
      if (inFlight.isEmpty()) {
        return;
      }
      waiting = new ArrayList<>(inFlight);
      inFlight.clear();
    }
    for (CompletableFuture<Void> f : waiting) {
      try {
        f.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted waiting for a device→host copy", e);
      } catch (ExecutionException e) {
        throw e.getCause() instanceof RuntimeException r
            ? r
            : new IllegalStateException(e.getCause());
      }
    }
  }
}
