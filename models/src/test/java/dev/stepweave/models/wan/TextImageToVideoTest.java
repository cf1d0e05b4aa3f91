package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.ModalPart;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.ProgramCheckpoint;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Wan2.2 TI2V on the tiny TI2V checkpoint through the loops and the engine: requests with and
 * without an image (the image mode and the text-only mode of one card), of different sizes, seeds
 * and step counts, interleaved and batched, give their serial frames bit for bit; a batched step
 * with rows of both modes equals each call alone (each row its own first frame and per-token
 * timesteps); every TI2V loop keeps the loop contract in both modes; a run resumed after any step
 * gives the whole run's frames; and requests that do not fit the card are one-line errors.
 */
class TextImageToVideoTest {
  static final Path CHECKPOINT = Path.of(System.getProperty("stepweave.golden"), "wan22-ti2v-tiny");
  private static WanModel model;

  @BeforeAll
  static void load() {
    model = WanModel.load(CHECKPOINT, new CpuBackend());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  /** A TI2V request, with {@code image} as its first frame or (null) text alone. */
  static Request request(
      String id, ModalPart.Image image, long seed, int width, int height, int steps, double cfg) {
    List<ModalPart> inputs = new ArrayList<>(List.of(new ModalPart.Text("a yellow cube")));
    if (image != null) {
      inputs.add(image);
    }
    return Request.builder(
            TaskType.TI2V,
            new DiffusionParams(
                steps,
                cfg,
                seed,
                width,
                height,
                5,
                24,
                "noisy",
                Optional.empty(),
                Optional.empty()))
        .id(id)
        .inputs(inputs)
        .nodeOverrides(Map.of(WanCards.TEXT_ENCODE, Map.of("max_sequence_length", "16")))
        .build();
  }

  private static List<Request> mix() {
    return List.of(
        request("a", ImageToVideoTest.image(61, 45, 1), 1234, 64, 32, 3, 4.0),
        request("b", null, 7, 64, 32, 3, 5.0),
        request("c", ImageToVideoTest.image(40, 40, 3), 99, 64, 32, 4, 1.0),
        request("d", null, 5, 32, 32, 2, 4.0),
        request("e", ImageToVideoTest.image(24, 60, 4), 42, 32, 32, 3, 4.0),
        request("f", null, 8, 64, 32, 4, 1.0));
  }

  @Test
  void interleavedBatchedTi2vRequestsWithAndWithoutImagesGiveTheirSerialFramesBitForBit()
      throws Exception {
    assertTrue(
        ServedAlone.assertConcurrentRunGivesSerialFrames(() -> new Engine(model), mix()) > 0,
        "nothing batched");
  }

  /** The denoise loop's first call for {@code r}, its upstream loops run. */
  private static DitCall firstCall(Request r) {
    Map<String, LoopResult> upstream = new HashMap<>();
    for (String loop : List.of(WanCards.TEXT_ENCODE, WanCards.VAE_ENCODE)) {
      upstream.put(
          loop,
          BlockCacheTest.runLoop(
              model.loop(loop), r, model, BlockCacheTest.context(r, Map.copyOf(upstream))));
    }
    var loop = (DenoiseLoop) model.loop(WanCards.DENOISE);
    var state = loop.init(r, model, BlockCacheTest.context(r, upstream));
    return (DitCall) ((dev.stepweave.core.loop.WorkPlan) loop.next(state)).call();
  }

  @Test
  void aBatchedStepOfRowsWithAndWithoutAFirstFrameEqualsEachCallAlone() {
    var ops = model.backend();
    List<DitCall> calls = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      DitCall call = firstCall(mix().get(i));
      calls.add(
          new DitCall(
              model,
              call.latents(),
              900f - 100 * i,
              call.cond(),
              call.uncond(),
              call.condition(),
              call.firstFrame(),
              call.image(),
              call.policy(),
              i,
              new dev.stepweave.core.extend.PluginState(),
              call.hooks(),
              call.taps(),
              call.expert(),
              List.of()));
    }
    assertTrue(calls.get(0).firstFrame() != null && calls.get(1).firstFrame() == null);
    var batched = calls.get(0).runBatch(List.copyOf(calls));
    for (int i = 0; i < calls.size(); i++) {
      assertArrayEquals(
          ops.download(calls.get(i).run().output()).toFloatArray(),
          ops.download(batched.get(i).output()).toFloatArray(),
          "call " + i);
    }
  }

  @Test
  void everyTi2vLoopPlansWithoutLaunchingAndItsCallsLeaveTheStateAsItWasInBothModes() {
    LoopContractTest.LaunchRecorder recorder = new LoopContractTest.LaunchRecorder();
    try (WanModel m = WanModel.load(CHECKPOINT, recorder.backend())) {
      for (Request r : List.of(mix().get(0), mix().get(1))) {
        Map<String, LoopResult> upstream = new HashMap<>();
        for (String loop : m.card().loopsFor(TaskType.TI2V)) {
          upstream.put(
              loop,
              LoopContractTest.drive(
                  m.loop(loop), r, m, BlockCacheTest.context(r, Map.copyOf(upstream)), recorder));
        }
        var encoded = upstream.get(WanCards.VAE_ENCODE).tensors();
        if (r.images().isEmpty()) {
          assertEquals(Map.of(), encoded, "text alone: no first frame");
        } else {
          assertArrayEquals(
              new int[] {1, 12, 1, 2, 4},
              encoded.get(VaeEncodeLoop.FIRST_FRAME).shape(),
              "the image's 12 latent channels, one latent frame of 32/16 × 64/16");
        }
      }
    }
  }

  @Test
  void otherTasksTwoImagesAndSizesOffThePatchGridAreOneLineErrors() {
    try (Engine engine = new Engine(model)) {
      // The text-only request as t2v, the one with an image as i2v: each well-formed for its task.
      for (TaskType task : List.of(TaskType.T2V, TaskType.I2V)) {
        Request given = mix().get(task == TaskType.T2V ? 1 : 0);
        Request other =
            Request.builder(task, given.params())
                .inputs(given.inputs())
                .nodeOverrides(given.nodeOverrides())
                .build();
        var e = assertThrows(InvalidRequestException.class, () -> engine.submit(other));
        assertEquals(
            "model 'wan22-ti2v-tiny' does not serve task " + task.wireName() + " (it serves ti2v)",
            e.getMessage());
      }
      List<ModalPart> twoImages = new ArrayList<>(mix().get(0).inputs());
      twoImages.add(ImageToVideoTest.image(8, 8, 5));
      var e =
          assertThrows(
              InvalidRequestException.class,
              () ->
                  engine.submit(
                      Request.builder(TaskType.TI2V, mix().get(0).params())
                          .inputs(twoImages)
                          .build()));
      assertEquals("a ti2v request takes at most one input image, got 2", e.getMessage());
      assertEquals(Optional.of(Request.IMAGE), e.field());
      // 48 is a multiple of 16 (any Wan request size) but not of the 16× VAE times patch 2.
      e =
          assertThrows(
              InvalidRequestException.class,
              () -> engine.submit(request("g", null, 1, 48, 32, 2, 4.0)));
      assertEquals(
          "size 48x32: model 'wan22-ti2v-tiny' needs a width that is a multiple of 32 and a height"
              + " of 32 (the VAE's 16x times the transformer's patch)",
          e.getMessage());
    }
  }

  @Test
  void aRunResumedAfterAnyStepGivesTheWholeRunsFramesInBothModes(@TempDir Path dir)
      throws Exception {
    for (Request r : List.of(mix().get(0), mix().get(1))) {
      List<Path> checkpoints = new ArrayList<>();
      List<String> loops = new ArrayList<>();
      float[] whole;
      try (Engine engine = new Engine(model)) {
        whole =
            ServedAlone.frames(
                engine.submit(
                    r,
                    cp -> {
                      Path f = dir.resolve(r.id() + checkpoints.size() + ".safetensors");
                      cp.write(f);
                      checkpoints.add(f);
                      loops.add(cp.current().loopId());
                    }));
      }
      List<String> expected = new ArrayList<>(List.of("text_encode", "text_encode"));
      if (!r.images().isEmpty()) {
        expected.add("vae_encode"); // without an image the loop runs no step
      }
      expected.addAll(List.of("denoise", "denoise", "denoise", "vae_decode", "vae_decode"));
      assertEquals(expected, loops, r.id());
      // A fresh instance (nothing cached) reads each checkpoint back from its file.
      try (WanModel fresh = WanModel.load(CHECKPOINT, new CpuBackend())) {
        for (int i = 1; i < checkpoints.size() - 1; i++) {
          try (Engine engine = new Engine(fresh)) {
            assertArrayEquals(
                whole,
                ServedAlone.frames(
                    engine.resume(r, ProgramCheckpoint.read(checkpoints.get(i)), null)),
                r.id() + " resumed after step " + i + " (" + loops.get(i) + ")");
          }
        }
      }
    }
  }
}
