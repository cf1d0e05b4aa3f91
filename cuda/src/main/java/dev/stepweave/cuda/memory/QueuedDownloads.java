package dev.stepweave.cuda.memory;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * Device→host copies that do not stop the host: each is queued on the stream into a page-locked
 * staging buffer, and a landing thread waits for it there, makes an ordinary host tensor of it (the
 * allocation and its zeroing too are off the caller's thread) and gives the buffer back. {@link
 * #awaitAll} (part of the backend's synchronisation) returns once every copy queued so far has
 * landed.
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
  private final List<CompletableFuture<Tensor>> inFlight = new ArrayList<>();

  QueuedDownloads(CudaContext context, PinnedHostBuffers pinned) {
    this.context = context;
    this.pinned = pinned;
  }

  /**
   * The contiguous host tensor of {@code dtype} and {@code shape} that the {@code bytes} at device
   * address {@code src} become once the work queued so far has run; the source must stay allocated
   * until then (stream order guarantees it: see {@link DeviceTensors#downloadQueued}).
   */
  Supplier<Tensor> queue(long src, DType dtype, int[] shape, long bytes) {
    return queue(src, bytes, () -> Tensor.zeros(dtype, shape));
  }

  /**
   * As {@link #queue(long, DType, int[], long)}, landing in the contiguous host tensor of {@code
   * bytes} that {@code target} supplies (asked on the landing thread, where it may wait).
   */
  Supplier<Tensor> queue(long src, long bytes, Supplier<Tensor> target) {
    MemorySegment staging = pinned.borrow(bytes);
    if (staging == null) {
      // No page-locked memory: an ordinary copy, which waits.
      Tensor host = target.get();
      MemorySegment into = host.segment();
      Driver.call(
          "cuMemcpyDtoH_v2", () -> (int) Driver.cuMemcpyDtoH_v2.invokeExact(into, src, bytes));
      return () -> host;
    }
    long stream = context.stream();
    Driver.call(
        "cuMemcpyDtoHAsync_v2",
        () -> (int) Driver.cuMemcpyDtoHAsync_v2.invokeExact(staging, src, bytes, stream));
    long event = context.recordEvent();
    CompletableFuture<Tensor> landed =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                context.awaitEvent(event);
                Tensor host = target.get();
                MemorySegment.copy(staging, 0, host.segment(), 0, bytes);
                return host;
              } finally {
                pinned.giveBack(staging);
              }
            },
            landing);
    synchronized (inFlight) {
      inFlight.add(landed);
    }
    return () -> {
      try {
        return landed.join();
      } catch (CompletionException e) {
        throw e.getCause() instanceof RuntimeException r ? r : e;
      }
    };
  }

  /** Waits until every copy queued so far has landed; a failed one throws here. */
  void awaitAll() {
    List<CompletableFuture<Tensor>> waiting;
    synchronized (inFlight) {
      if (inFlight.isEmpty()) {
        return;
      }
      waiting = new ArrayList<>(inFlight);
      inFlight.clear();
    }
    for (CompletableFuture<Tensor> f : waiting) {
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
