package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A pool-fatal fault injected into a real backend mid-run (the tiny golden checkpoint on the CPU):
 * the engine rebuilds the pool through {@link WanPoolRecovery} — the broken instance and its
 * backend closed, a new backend opened and the weights loaded again — and the running requests
 * resume from their last checkpoints to the frames an undisturbed run gives, bit for bit.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PoolFatalRecoveryTest {
  static final Path CHECKPOINT = InterleaveGateTest.CHECKPOINT;

  private static List<Request> requests() {
    List<Request> out = new ArrayList<>();
    long[] seeds = {1234, 7};
    for (int i = 0; i < seeds.length; i++) {
      out.add(
          Request.builder(
                  TaskType.T2V,
                  new DiffusionParams(
                      4, 5.0, seeds[i], 32, 32, 9, 8, "blurry", Optional.empty(), Optional.empty()))
              .id("r" + i)
              .prompt("a red ball bouncing " + i)
              .nodeOverrides(Map.of(WanCards.TEXT_ENCODE, Map.of("max_sequence_length", "16")))
              .build());
    }
    return out;
  }

  private static List<float[]> run(Engine engine) throws Exception {
    List<RequestHandle> handles = new ArrayList<>();
    for (Request r : requests()) {
      handles.add(engine.submit(r));
    }
    List<float[]> frames = new ArrayList<>();
    for (RequestHandle h : handles) {
      frames.add(ServedAlone.frames(h));
    }
    return frames;
  }

  @Test
  void aStickyDeviceFaultRebuildsThePoolAndTheRunningRequestsCompleteAsIfNothingHappened()
      throws Exception {
    List<float[]> undisturbed;
    try (WanModel clean = WanModel.load(CHECKPOINT, new CpuBackend());
        Engine engine = new Engine(clean)) {
      undisturbed = run(engine);
    }

    // The run makes 38 attention calls (text encoding, denoising, decoding): the 20th is mid-run.
    FaultInjectingBackend faulty = new FaultInjectingBackend(new CpuBackend(), "attention", 20);
    List<Backend> opened = new ArrayList<>();
    WanModel first = WanModel.load(CHECKPOINT, faulty.backend);
    EngineConfig config =
        EngineConfig.builder()
            .recovery(
                new WanPoolRecovery(
                    CHECKPOINT,
                    () -> {
                      Backend b = new CpuBackend();
                      opened.add(b);
                      return b;
                    },
                    WanLoadOptions.DEFAULT))
            .build();
    try (Engine engine = new Engine(first, config)) {
      List<float[]> recovered = run(engine);
      assertTrue(
          faulty.broken.get(), "the fault was never injected: " + faulty.calls.get() + " calls");
      assertEquals(1, engine.poolFaults());
      assertTrue(faulty.closed.get(), "the broken backend was not closed");
      assertEquals(1, opened.size(), "one new backend");
      WanModel now = (WanModel) engine.model();
      assertNotSame(first, now);
      assertEquals(opened.getFirst(), now.backend());
      assertNotSame(first.textEmbeddingCache(), now.textEmbeddingCache());
      for (int i = 0; i < undisturbed.size(); i++) {
        assertArrayEquals(undisturbed.get(i), recovered.get(i), "request r" + i);
      }
      assertEquals(2, engine.stats().completed());
      assertEquals(0, engine.stats().failed());
      now.close();
    }
  }
}
