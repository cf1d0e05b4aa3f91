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

  /** A backend whose only operation is download, which it records. */
  private static Backend downloader(List<Tensor> downloaded) {
    return (Backend)
        Proxy.newProxyInstance(
            Backend.class.getClassLoader(),
            new Class<?>[] {Backend.class},
            (proxy, method, args) -> {
              if (!method.getName().equals("download")) {
                throw new UnsupportedOperationException(method.getName());
              }
              Tensor t = (Tensor) args[0];
              downloaded.add(t);
              Tensor host =
                  new Tensor(
                      new Storage(t.storage().segment(), Device.CPU),
                      t.dtype(),
                      t.shape(),
                      t.strides(),
                      t.offset());
              return host.toHost(DType.F32);
            });
  }

  @Test
  void unchangedTensorsAreCopiedOnceAndDtypesSurvive() {
    List<Tensor> downloaded = new ArrayList<>();
    Backend gpu = downloader(downloaded);
    HostCheckpoints capture = new HostCheckpoints();
    Tensor text = onDevice(DType.BF16, 1.5f, -2f, 3f);
    Tensor latents1 = onDevice(DType.F32, 0.25f, 0.5f);
    Map<String, LoopResult> finished =
        Map.of("text_encode", new LoopResult(Map.of("embeds", text), List.of()));

    ProgramCheckpoint first =
        capture.capture(
            "r",
            finished,
            new SerializedState("denoise", Map.of("latents", latents1), "{}"),
            () -> gpu);
    assertEquals(List.of(text, latents1), sortedLike(downloaded, text, latents1));
    Tensor hostText = first.finished().get("text_encode").tensors().get("embeds");
    assertEquals(Device.Kind.CPU, hostText.device().kind());
    assertEquals(DType.BF16, hostText.dtype(), "a BF16 device tensor stays BF16 on the host");
    assertArrayEquals(new float[] {1.5f, -2f, 3f}, hostText.toFloatArray());

    // Next step: new latents, the same text embeddings.
    downloaded.clear();
    Tensor latents2 = onDevice(DType.F32, 0.75f, 1f);
    SerializedState second = new SerializedState("denoise", Map.of("latents", latents2), "{}");
    assertTrue(capture.predictedSeconds(finished, second) > 0, "the new latents need a copy");
    ProgramCheckpoint next = capture.capture("r", finished, second, () -> gpu);
    assertEquals(List.of(latents2), downloaded, "only what changed is copied");
    assertSame(hostText, next.finished().get("text_encode").tensors().get("embeds"));
    assertEquals((3 + 2 + 2) * 4L, capture.stats().bytesCopied());
    assertEquals(2, capture.stats().captures());
    assertEquals(3 * 4L, capture.stats().bytesReused());
    assertEquals(0, capture.predictedSeconds(finished, second), "nothing new to copy");
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
