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
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Image-to-video on the tiny Wan2.1 I2V checkpoint through the loops and the engine: requests of
 * different images, sizes, seeds and step counts interleaved and batched give their serial frames
 * bit for bit; the image encoder runs once per distinct image; every I2V loop keeps the loop
 * contract; a run resumed from a checkpoint after any loop's step gives the frames of the whole
 * run; and requests that do not fit the card's task are one-line errors.
 */
class ImageToVideoTest {
  static final Path CHECKPOINT = Path.of(System.getProperty("stepweave.golden"), "wan21-i2v-tiny");
  private static WanModel model;

  @BeforeAll
  static void load() {
    model = WanModel.load(CHECKPOINT, new CpuBackend());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  /** A deterministic RGB test pattern, distinct per {@code salt}. */
  static ModalPart.Image image(int width, int height, int salt) {
    byte[] rgb = new byte[width * height * 3];
    for (int y = 0; y < height; y++) {
      for (int x = 0; x < width; x++) {
        int i = (y * width + x) * 3;
        rgb[i] = (byte) (x * 255 / width + salt * 37);
        rgb[i + 1] = (byte) (y * 255 / height + salt * 11);
        rgb[i + 2] = (byte) ((x ^ y) * 7 + salt * 53);
      }
    }
    return new ModalPart.Image(width, height, rgb, "pattern-" + width + "x" + height + "-" + salt);
  }

  static Request request(
      String id, ModalPart.Image image, long seed, int width, int height, int steps, double cfg) {
    return Request.builder(
            TaskType.I2V,
            new DiffusionParams(
                steps,
                cfg,
                seed,
                width,
                height,
                5,
                16,
                "blurry",
                Optional.empty(),
                Optional.empty()))
        .id(id)
        .inputs(List.of(new ModalPart.Text("a red ball on the grass"), image))
        .nodeOverrides(Map.of(WanCards.TEXT_ENCODE, Map.of("max_sequence_length", "16")))
        .build();
  }

  private static List<Request> mix() {
    return List.of(
        request("a", image(61, 45, 1), 1234, 32, 48, 4, 4.0),
        request("b", image(32, 48, 2), 7, 32, 48, 3, 5.0),
        request("c", image(40, 40, 3), 99, 32, 32, 5, 4.0),
        request("d", image(61, 45, 1), 5, 32, 48, 4, 1.0),
        request("e", image(24, 60, 4), 42, 32, 48, 6, 4.0),
        request("f", image(32, 48, 2), 8, 32, 48, 6, 5.0));
  }

  @Test
  void interleavedBatchedI2vRequestsGiveTheirSerialFramesBitForBit() throws Exception {
    assertTrue(
        ServedAlone.assertConcurrentRunGivesSerialFrames(() -> new Engine(model), mix()) > 0,
        "nothing batched");
  }

  @Test
  void aBatchedI2vDitStepEqualsEachCallRunAlone() {
    var ops = model.backend();
    List<DitCall> calls = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Request r = mix().get(i % 2);
      var text =
          BlockCacheTest.runLoop(
              (TextEncodeLoop) model.loop(WanCards.TEXT_ENCODE),
              r,
              model,
              BlockCacheTest.context(r, Map.of()));
      Map<String, LoopResult> upstream =
          new java.util.HashMap<>(Map.of(WanCards.TEXT_ENCODE, text));
      for (String loop : List.of(WanCards.IMAGE_ENCODE, WanCards.VAE_ENCODE)) {
        upstream.put(
            loop,
            BlockCacheTest.runLoop(
                model.loop(loop), r, model, BlockCacheTest.context(r, upstream)));
      }
      var loop = (DenoiseLoop) model.loop(WanCards.DENOISE);
      var state = loop.init(r, model, BlockCacheTest.context(r, upstream));
      var plan = (dev.stepweave.core.loop.WorkPlan) loop.next(state);
      DitCall call = (DitCall) plan.call();
      calls.add(
          new DitCall(
              model,
              ops.upload(
                  dev.stepweave.tensor.rng.TorchGenerator.seeded(i).randn(state.latents().shape()),
                  dev.stepweave.tensor.DType.F32),
              900f - 100 * i,
              call.cond(),
              call.uncond(),
              call.condition(),
              call.firstFrame(),
              call.image(),
              i == 2 ? new dev.stepweave.core.loop.policy.CfgPolicy.CondOnly() : call.policy(),
              i,
              new dev.stepweave.core.extend.PluginState(),
              call.hooks(),
              call.taps(),
              call.expert(),
              List.of()));
    }
    var batched = calls.get(0).runBatch(List.copyOf(calls));
    for (int i = 0; i < calls.size(); i++) {
      assertArrayEquals(
          ops.download(calls.get(i).run().output()).toFloatArray(),
          ops.download(batched.get(i).output()).toFloatArray(),
          "call " + i);
    }
  }

  @Test
  void theImageEncoderRunsOncePerDistinctImage() throws Exception {
    long before = model.imageEmbeddingCache().metrics().misses();
    long hitsBefore = model.imageEmbeddingCache().metrics().hits();
    ModalPart.Image fresh = image(50, 30, 9);
    try (Engine engine = new Engine(model)) {
      ServedAlone.frames(engine.submit(request("x", fresh, 1, 32, 32, 1, 1.0)));
      ServedAlone.frames(engine.submit(request("y", fresh, 2, 32, 48, 2, 1.0)));
    }
    assertEquals(1, model.imageEmbeddingCache().metrics().misses() - before);
    assertEquals(1, model.imageEmbeddingCache().metrics().hits() - hitsBefore);
  }

  @Test
  void everyI2vLoopPlansWithoutLaunchingAndItsCallsLeaveTheStateAsItWas() {
    LoopContractTest.LaunchRecorder recorder = new LoopContractTest.LaunchRecorder();
    try (WanModel m = WanModel.load(CHECKPOINT, recorder.backend())) {
      Request r = mix().get(0);
      Map<String, LoopResult> upstream = new java.util.HashMap<>();
      for (String loop : m.card().loopsFor(TaskType.I2V)) {
        upstream.put(
            loop,
            LoopContractTest.drive(
                m.loop(loop), r, m, BlockCacheTest.context(r, Map.copyOf(upstream)), recorder));
      }
      assertEquals(
          List.of(1, 20, 2, 6, 4),
          java.util.Arrays.stream(upstream.get(WanCards.VAE_ENCODE).tensor("condition").shape())
              .boxed()
              .toList(),
          "the mask's 4 channels and the image's 16 latent channels");
    }
  }

  @Test
  void aRunResumedAfterAnyStepGivesTheWholeRunsFrames(@TempDir Path dir) throws Exception {
    Request r = mix().get(0);
    List<Path> checkpoints = new ArrayList<>();
    List<String> loops = new ArrayList<>();
    float[] whole;
    try (Engine engine = new Engine(model)) {
      whole =
          ServedAlone.frames(
              engine.submit(
                  r,
                  cp -> {
                    Path f = dir.resolve("step" + checkpoints.size() + ".safetensors");
                    cp.write(f);
                    checkpoints.add(f);
                    loops.add(cp.current().loopId());
                  }));
    }
    assertEquals(
        List.of(
            "text_encode",
            "text_encode",
            "image_encode",
            "vae_encode",
            "denoise",
            "denoise",
            "denoise",
            "denoise",
            "vae_decode",
            "vae_decode"),
        loops);
    // A fresh instance (nothing cached) reads each checkpoint back from its file.
    try (WanModel fresh = WanModel.load(CHECKPOINT, new CpuBackend())) {
      for (int i : new int[] {2, 3, 5, 8}) {
        try (Engine engine = new Engine(fresh)) {
          assertArrayEquals(
              whole,
              ServedAlone.frames(
                  engine.resume(r, ProgramCheckpoint.read(checkpoints.get(i)), null)),
              "resumed after step " + i + " (" + loops.get(i) + ")");
        }
      }
    }
  }

  @Test
  void requestsThatDoNotFitTheTaskAreOneLineErrors() {
    try (Engine engine = new Engine(model)) {
      Request t2v =
          Request.builder(TaskType.T2V, mix().get(0).params())
              .prompt("a red ball")
              .nodeOverrides(mix().get(0).nodeOverrides())
              .build();
      var e = assertThrows(InvalidRequestException.class, () -> engine.submit(t2v));
      assertEquals(
          "model 'wan21-i2v-tiny' does not serve task t2v (it serves i2v)", e.getMessage());
      assertEquals(Optional.of("task"), e.field());
      Request noImage =
          Request.builder(TaskType.I2V, mix().get(0).params()).prompt("a red ball").build();
      e = assertThrows(InvalidRequestException.class, () -> engine.submit(noImage));
      assertEquals(
          "an i2v request needs an input image (image / input_reference); none was given",
          e.getMessage());
      assertEquals(Optional.of(Request.IMAGE), e.field());
    }
  }

  @Test
  void anImageOnATextToVideoModelIsAOneLineError() {
    try (WanModel t2v = WanModel.load(InterleaveGateTest.CHECKPOINT, new CpuBackend());
        Engine engine = new Engine(t2v)) {
      Request withImage =
          Request.builder(TaskType.T2V, mix().get(0).params())
              .inputs(List.of(new ModalPart.Text("a red ball"), image(8, 8, 0)))
              .build();
      var e = assertThrows(InvalidRequestException.class, () -> engine.submit(withImage));
      assertEquals(
          "a t2v request takes no input image (got 1); image-to-video is task i2v", e.getMessage());
      Request i2v = mix().get(0);
      e = assertThrows(InvalidRequestException.class, () -> engine.submit(i2v));
      assertEquals(
          "model 'wan21-tiny' does not serve task i2v (it serves t2i, t2v)", e.getMessage());
    }
  }
}
