package dev.stepweave.core.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.SerializedState;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Recovery checkpoints copy each device tensor to the host once per run, keep the device's dtype,
 * and are taken only when the copy is cheap against the work it protects.
 */
class HostCheckpointsTest {
  /** Tensors the test pretends live on a GPU (host memory under a CUDA device tag). */
  private static Tensor onDevice(DType dtype, float... values) {
    Tensor host = Tensor.of(values, values.length).toHost(dtype);
    return new Tensor(
        new Storage(host.storage().segment(), Device.cuda(0)),
        dtype,
        host.shape(),
        Tensor.contiguousStrides(host.shape()),
        0);
  }

  /**
   * A device backend whose queued downloads land only at {@code synchronize}, as a GPU's copies
   * behind its stream do: a host copy read before then holds NaNs. It records every download and
   * counts the synchronisations.
   */
  private static final class QueuedCopies {
    final List<Tensor> downloaded = new ArrayList<>();
    final List<Runnable> pending = new ArrayList<>();
    int synchronizations;

    Backend backend() {
      return (Backend)
          Proxy.newProxyInstance(
              Backend.class.getClassLoader(),
              new Class<?>[] {Backend.class},
              (proxy, method, args) ->
                  switch (method.getName()) {
                    case "downloadQueued" -> queue((Tensor) args[0]);
                    case "synchronize" -> {
                      synchronizations++;
                      pending.forEach(Runnable::run);
                      pending.clear();
                      yield null;
                    }
                    default -> throw new UnsupportedOperationException(method.getName());
                  });
    }

    private java.util.function.Supplier<Tensor> queue(Tensor t) {
      downloaded.add(t);
      Tensor source =
          new Tensor(
              new Storage(t.storage().segment(), Device.CPU),
              t.dtype(),
              t.shape(),
              t.strides(),
              t.offset());
      Tensor host = Tensor.full(Float.NaN, t.shape()).toHost(t.dtype());
      pending.add(
          () -> host.storage().segment().copyFrom(source.toHost(t.dtype()).storage().segment()));
      return () -> host;
    }
  }

  @Test
  void unchangedTensorsAreCopiedOnceAndDtypesSurvive() {
    QueuedCopies device = new QueuedCopies();
    Backend gpu = device.backend();
    List<Tensor> downloaded = device.downloaded;
    HostCheckpoints capture = new HostCheckpoints();
    Tensor text = onDevice(DType.BF16, 1.5f, -2f, 3f);
    Tensor latents1 = onDevice(DType.F32, 0.25f, 0.5f);
    Map<String, LoopResult> finished =
        Map.of("text_encode", new LoopResult(Map.of("embeds", text), List.of()));

    ProgramCheckpoint first =
        capture
            .capture(
                "r",
                finished,
                new SerializedState("denoise", Map.of("latents", latents1), "{}"),
                () -> gpu)
            .get();
    assertEquals(List.of(text, latents1), sortedLike(downloaded, text, latents1));
    assertEquals(1, device.synchronizations, "the run's first capture waits: it measures the rate");
    assertFalse(capture.queued());
    Tensor hostText = first.finished().get("text_encode").tensors().get("embeds");
    assertEquals(Device.Kind.CPU, hostText.device().kind());
    assertEquals(DType.BF16, hostText.dtype(), "a BF16 device tensor stays BF16 on the host");
    assertArrayEquals(new float[] {1.5f, -2f, 3f}, hostText.toFloatArray());

    // Next step: new latents, the same text embeddings.
    downloaded.clear();
    Tensor latents2 = onDevice(DType.F32, 0.75f, 1f);
    SerializedState second = new SerializedState("denoise", Map.of("latents", latents2), "{}");
    assertTrue(capture.predictedSeconds(finished, second) > 0, "the new latents need a copy");
    var next = capture.capture("r", finished, second, () -> gpu);
    assertEquals(List.of(latents2), downloaded, "only what changed is copied");
    assertEquals(1, device.synchronizations, "later captures do not wait");
    assertTrue(capture.queued(), "its copy is still queued");
    gpu.synchronize();
    capture.confirm();
    assertArrayEquals(
        new float[] {0.75f, 1f}, next.get().current().tensors().get("latents").toFloatArray());
    assertSame(hostText, next.get().finished().get("text_encode").tensors().get("embeds"));
    assertEquals((3 + 2 + 2) * 4L, capture.stats().bytesCopied());
    assertEquals(2, capture.stats().captures());
    assertEquals(3 * 4L, capture.stats().bytesReused());
    assertEquals(0, capture.predictedSeconds(finished, second), "nothing new to copy");
  }

  @Test
  void aQueuedCaptureIsWhereTheRunStoodWhenItWasTaken() {
    QueuedCopies device = new QueuedCopies();
    Backend gpu = device.backend();
    HostCheckpoints capture = new HostCheckpoints();
    Map<String, LoopResult> finished = new java.util.LinkedHashMap<>();
    finished.put(
        "text_encode", new LoopResult(Map.of("embeds", onDevice(DType.F32, 1f)), List.of()));
    SerializedState state =
        new SerializedState("denoise", Map.of("x", onDevice(DType.F32, 2f)), "{}");
    capture.capture("r", finished, state, () -> gpu).get(); // the first waits
    var queued = capture.capture("r", finished, state, () -> gpu);
    // The run moves on before the capture is resolved: another loop finishes.
    finished.put("denoise", new LoopResult(Map.of("latents", onDevice(DType.F32, 3f)), List.of()));
    gpu.synchronize();
    assertEquals(List.of("text_encode"), List.copyOf(queued.get().finished().keySet()));
  }

  @Test
  void aCaptureNeverConfirmedLeavesNoCopyToReuse() {
    QueuedCopies device = new QueuedCopies();
    Backend gpu = device.backend();
    HostCheckpoints capture = new HostCheckpoints();
    Tensor latents1 = onDevice(DType.F32, 1f);
    Tensor latents2 = onDevice(DType.F32, 2f);
    Map<String, LoopResult> none = Map.of();
    capture.capture(
        "r", none, new SerializedState("denoise", Map.of("x", latents1), "{}"), () -> gpu);
    SerializedState state = new SerializedState("denoise", Map.of("x", latents2), "{}");
    capture.capture("r", none, state, () -> gpu);
    assertTrue(capture.queued());
    // A fault before the device synchronised: the copy of latents2 may be incomplete.
    capture.forgetUnconfirmed();
    assertFalse(capture.queued());
    assertTrue(
        capture.predictedSeconds(none, state) > 0, "latents2 must be copied again, not reused");
    device.downloaded.clear();
    capture.capture("r", none, state, () -> gpu);
    assertEquals(List.of(latents2), device.downloaded);
  }

  @Test
  void aCaptureIsDueOnlyWhenItsCopyIsCheapAgainstTheWorkItProtects() {
    RecoveryCheckpoints policy = RecoveryCheckpoints.DEFAULT;
    assertTrue(policy.due(Duration.ofMillis(1000), 0.05), "5% of a second");
    assertFalse(policy.due(Duration.ofMillis(1000), 0.06));
    assertTrue(policy.due(Duration.ZERO, 0), "host state costs nothing: every step");
    assertFalse(RecoveryCheckpoints.OFF.due(Duration.ofHours(1), 0));
    RecoveryCheckpoints every10s = new RecoveryCheckpoints(true, Duration.ofSeconds(10), 0.05);
    assertFalse(every10s.due(Duration.ofSeconds(9), 0));
    assertTrue(every10s.due(Duration.ofSeconds(10), 0));
  }

  private static List<Tensor> sortedLike(List<Tensor> got, Tensor... order) {
    List<Tensor> out = new ArrayList<>();
    for (Tensor t : order) {
      if (got.stream().anyMatch(g -> g == t)) {
        out.add(t);
      }
    }
    assertEquals(got.size(), out.size(), "unexpected downloads " + got);
    return out;
  }
}
