package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.SerializedState;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
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
 * <p>The table holds only the tensors of the latest capture, so it never keeps a tensor alive that
 * the run has dropped. Only the scheduler thread uses it.
 */
final class HostCheckpoints {
  /** Assumed device→host rate before anything was measured: a pageable copy over PCIe. */
  private static final double DEFAULT_BYTES_PER_SECOND = 4e9;

  private Map<Tensor, Tensor> copies = new IdentityHashMap<>();
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
    double rate =
        copyNanos > 0 && bytesCopied > 0
            ? bytesCopied / (copyNanos / 1e9)
            : DEFAULT_BYTES_PER_SECOND;
    return bytes / rate;
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

  /** Where the run stands, all of it in host memory (what a checkpoint file or a resume needs). */
  ProgramCheckpoint capture(
      String requestId,
      Map<String, LoopResult> finished,
      SerializedState current,
      Supplier<Backend> backend) {
    Map<Tensor, Tensor> next = new IdentityHashMap<>();
    Map<String, LoopResult> hostFinished = new LinkedHashMap<>();
    finished.forEach(
        (loop, result) ->
            hostFinished.put(
                loop,
                new LoopResult(
                    onHost(result.tensors(), backend, next), result.artifacts(), result.report())));
    SerializedState hostCurrent =
        new SerializedState(
            current.loopId(), onHost(current.tensors(), backend, next), current.json());
    copies = next;
    captures++;
    return new ProgramCheckpoint(requestId, hostFinished, hostCurrent);
  }

  /** What this run's captures have cost so far. */
  CheckpointStats stats() {
    return new CheckpointStats(
        captures, bytesCopied, bytesReused, java.time.Duration.ofNanos(copyNanos));
  }

  private Map<String, Tensor> onHost(
      Map<String, Tensor> tensors, Supplier<Backend> backend, Map<Tensor, Tensor> next) {
    Map<String, Tensor> out = new LinkedHashMap<>();
    tensors.forEach((name, t) -> out.put(name, onHost(t, backend, next)));
    return out;
  }

  private Tensor onHost(Tensor t, Supplier<Backend> backend, Map<Tensor, Tensor> next) {
    if (t.device().kind() == Device.Kind.CPU) {
      return t;
    }
    Tensor host = copies.get(t);
    if (host == null) {
      host = next.get(t);
    }
    if (host == null) {
      long t0 = System.nanoTime();
      host = backend.get().download(t);
      if (t.dtype().isFloating() && t.dtype() != DType.F32) {
        // Keep the device's dtype (exact: its values came from it), so a resume restores it.
        host = host.toHost(t.dtype());
      }
      copyNanos += System.nanoTime() - t0;
      bytesCopied += t.numel() * 4L;
    } else {
      bytesReused += t.numel() * 4L;
    }
    next.put(t, host);
    return host;
  }
}
