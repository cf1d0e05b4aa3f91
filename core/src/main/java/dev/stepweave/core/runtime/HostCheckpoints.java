package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.SerializedState;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Turns one run's checkpoints into host checkpoints, copying each device tensor to the host once.
 *
 * <p>Loops serialise their state as the tensors they hold, wherever those live; state tensors are
 * never written in place (the backend's operations return new tensors), so a tensor seen by the
 * previous capture has not changed since, and its host copy is reused. Between two denoising steps
 * only the latents and the sampler's newest entry are new — the text embeddings, older sampler
 * history and finished loops' results are copied once per run, not once per step.
 *
 * <p>Copies are queued behind the device's work ({@link Backend#downloadQueued}): a capture's host
 * tensors are filled while the next step computes and are valid once the device next synchronises —
 * the engine does so after every call, so the capture taken after step n is complete when step n+1
 * has run ({@link #confirm}). A capture never confirmed (a fault came first) is forgotten, and so
 * are its copies. The copy rate the policy prices a capture at is measured by the run's first
 * capture that copies anything, which waits for its copies.
 *
 * <p>The table holds only the tensors of the latest capture, so it never keeps a tensor alive that
 * the run has dropped. Only the scheduler thread uses it.
 */
final class HostCheckpoints {
  /** Assumed device→host rate before anything was measured: a pageable copy over PCIe. */
  private static final double DEFAULT_BYTES_PER_SECOND = 4e9;

  private Map<Tensor, Supplier<Tensor>> copies = new IdentityHashMap<>();
  private Map<Tensor, Supplier<Tensor>> confirmed = copies;
  private double measuredRate; // bytes per second; 0 until a capture measured it
  private long queuedBytes;
  private long bytesCopied;
  private long bytesReused;
  private long copyNanos;
  private long captures;

  /**
   * What capturing {@code current} (with {@code finished}) would cost now, in seconds: its tensors
   * not yet on the host at the copy rate measured so far.
   */
  double predictedSeconds(Map<String, LoopResult> finished, SerializedState current) {
    long bytes = 0;
    for (LoopResult r : finished.values()) {
      bytes += newBytes(r.tensors());
    }
    bytes += newBytes(current.tensors());
    if (bytes == 0) {
      return 0;
    }
    return bytes / rate();
  }

  private double rate() {
    return measuredRate > 0 ? measuredRate : DEFAULT_BYTES_PER_SECOND;
  }

  private long newBytes(Map<String, Tensor> tensors) {
    long bytes = 0;
    for (Tensor t : tensors.values()) {
      if (t.device().kind() != Device.Kind.CPU && !copies.containsKey(t)) {
        bytes += t.numel() * 4L;
      }
    }
    return bytes;
  }

  /**
   * Where the run stands, all of it in host memory (what a checkpoint file or a resume needs),
   * readable once the device next synchronises ({@link #queued} says whether it is waiting for
   * that): the host tensors are made and filled off the scheduler thread.
   */
  Supplier<ProgramCheckpoint> capture(
      String requestId,
      Map<String, LoopResult> finished,
      SerializedState current,
      Supplier<Backend> backend) {
    long started = System.nanoTime();
    Map<Tensor, Supplier<Tensor>> next = new IdentityHashMap<>();
    // Taken now: the run's maps change before the checkpoint is resolved.
    Map<String, LoopResult> finishedNow = new LinkedHashMap<>(finished);
    Map<String, Map<String, Supplier<Tensor>>> finishedCopies = new LinkedHashMap<>();
    finishedNow.forEach(
        (loop, result) -> finishedCopies.put(loop, onHost(result.tensors(), backend, next)));
    Map<String, Supplier<Tensor>> currentCopies = onHost(current.tensors(), backend, next);
    copies = next;
    captures++;
    Supplier<ProgramCheckpoint> checkpoint =
        memoized(
            () -> {
              Map<String, LoopResult> hostFinished = new LinkedHashMap<>();
              finishedNow.forEach(
                  (loop, result) ->
                      hostFinished.put(
                          loop,
                          new LoopResult(
                              resolved(finishedCopies.get(loop)),
                              result.artifacts(),
                              result.report())));
              return new ProgramCheckpoint(
                  requestId,
                  hostFinished,
                  new SerializedState(current.loopId(), resolved(currentCopies), current.json()));
            });
    if (queuedBytes > 0 && measuredRate == 0) {
      long t0 = System.nanoTime();
      backend.get().synchronize();
      checkpoint.get();
      long done = System.nanoTime();
      copyNanos += done - t0;
      measuredRate = queuedBytes / Math.max(1e-9, (done - started) / 1e9);
      confirm();
    }
    return checkpoint;
  }

  private static Map<String, Tensor> resolved(Map<String, Supplier<Tensor>> copies) {
    Map<String, Tensor> out = new LinkedHashMap<>();
    copies.forEach((name, t) -> out.put(name, t.get()));
    return out;
  }

  private static <T> Supplier<T> memoized(Supplier<T> make) {
    return new Supplier<>() {
      private T value;

      @Override
      public synchronized T get() {
        if (value == null) {
          value = make.get();
        }
        return value;
      }
    };
  }

  /** Whether the last capture's copies are still queued on the device. */
  boolean queued() {
    return queuedBytes > 0;
  }

  /** The device has synchronised since the last capture: its copies are complete. */
  void confirm() {
    confirmed = copies;
    queuedBytes = 0;
  }

  /** The last capture was never confirmed: its copies may be incomplete and are not reused. */
  void forgetUnconfirmed() {
    copies = confirmed;
    queuedBytes = 0;
  }

  /** What this run's captures have cost so far. */
  CheckpointStats stats() {
    return new CheckpointStats(
        captures, bytesCopied, bytesReused, java.time.Duration.ofNanos(copyNanos));
  }

  private Map<String, Supplier<Tensor>> onHost(
      Map<String, Tensor> tensors, Supplier<Backend> backend, Map<Tensor, Supplier<Tensor>> next) {
    Map<String, Supplier<Tensor>> out = new LinkedHashMap<>();
    tensors.forEach((name, t) -> out.put(name, onHost(t, backend, next)));
    return out;
  }

  private Supplier<Tensor> onHost(
      Tensor t, Supplier<Backend> backend, Map<Tensor, Supplier<Tensor>> next) {
    if (t.device().kind() == Device.Kind.CPU) {
      return () -> t;
    }
    Supplier<Tensor> host = copies.get(t);
    if (host == null) {
      host = next.get(t);
    }
    if (host == null) {
      // In the device's dtype (exact: its values came from it), so a resume restores it.
      long t0 = System.nanoTime();
      host = backend.get().downloadQueued(t);
      copyNanos += System.nanoTime() - t0;
      bytesCopied += t.numel() * 4L;
      queuedBytes += t.numel() * 4L;
    } else {
      bytesReused += t.numel() * 4L;
    }
    next.put(t, host);
    return host;
  }
}
