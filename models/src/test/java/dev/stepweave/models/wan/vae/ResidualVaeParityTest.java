package dev.stepweave.models.wan.vae;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.GoldenBounds;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * C0 parity of the residual (Wan 2.2) VAE against the diffusers recording of the tiny TI2V
 * checkpoint: 2×2 pixel patches, residual stages with folding and repeating shortcuts, a decoder of
 * its own base width, 12 latent channels, 16× spatial compression. The decode is stepped one latent
 * frame (or one tile of one) at a time, so stepping, resuming and tiling must not change a bit.
 */
class ResidualVaeParityTest {
  /** The golden bound for VAE outputs (golden/README.md); never loosen it. */
  private static final double TOLERANCE = GoldenBounds.maxAbs("vae");

  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));

  /**
   * 26 latent rows (416 pixels): more than a 4-row tile plus two halos, so halos get cut; two
   * latent frames, so the first-chunk handling and the doubling after it both run; narrow, to keep
   * the test quick.
   */
  private static final int[] TALL_SHAPE = {1, 12, 2, 26, 2};

  private static Backend backend;
  private static SafetensorsFile weightsFile;
  private static SafetensorsFile expected;
  private static WanVae vae;

  @BeforeAll
  static void load() {
    backend = new CpuBackend(2);
    Path dir = GOLDEN.resolve("wan22-ti2v-tiny/vae");
    weightsFile = SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"));
    expected = SafetensorsFile.open(GOLDEN.resolve("wan22-ti2v-tiny-expected/vae.safetensors"));
    vae =
        WanVae.load(
            WanVaeConfig.read(dir.resolve("config.json")),
            new Weights(weightsFile, backend, DType.F32));
  }

  @AfterAll
  static void close() {
    expected.close();
    weightsFile.close();
  }

  private static Tensor input(String name) {
    return backend.upload(expected.load(name), DType.F32);
  }

  @Test
  void encodeMatchesReferencePosterior() {
    Posterior posterior = vae.encode(input("video"));
    assertWithinGolden("latent_mean", posterior.mean());
    assertWithinGolden("latent_logvar", posterior.logvar());
  }

  @Test
  void encodeRunsOneChunkPerStep() {
    Tensor video = input("video");
    EncodeState state = vae.startEncode(video);
    assertEquals(1 + (video.dim(2) - 1) / EncodeState.CHUNK_FRAMES, state.chunkCount());
    assertEquals(vae.config().inChannels(), state.video().dim(1), "patches folded into channels");
    int steps = 0;
    while (vae.step(state)) {
      steps++;
      assertEquals(steps, state.encoded().size());
    }
    assertEquals(state.chunkCount(), steps + 1);
    assertWithinGolden("latent_mean", vae.finish(state).mean());
  }

  @Test
  void decodeMatchesReferenceVideo() {
    assertWithinGolden("decoded", vae.decode(input("z")));
  }

  @Test
  void steppedDecodeIsBitIdenticalToTheOneShotDecode() {
    Tensor z = input("z");
    float[] oneShot = backend.download(vae.decode(z)).toFloatArray();
    DecodeState state = vae.startDecode(z);
    int steps = 0;
    while (!state.isDone()) {
      DecodeState before = state;
      state = vae.stepped(state);
      steps++;
      assertEquals(steps, state.decoded().size(), "one latent frame per step");
      assertEquals(steps - 1, before.decoded().size(), "a step leaves its input state alone");
    }
    assertEquals(z.dim(2), steps);
    // The first latent frame decodes to one frame, every later one to temporal-compression many.
    int frames = 1 + (z.dim(2) - 1) * vae.config().temporalCompression();
    assertEquals(frames, vae.finish(state).dim(2));
    assertArrayEquals(oneShot, backend.download(vae.finish(state)).toFloatArray());
  }

  @Test
  void decodeResumesBitIdenticallyAfterEveryStep(@TempDir Path dir) {
    Tensor z = input("z");
    float[] straight = backend.download(vae.decode(z)).toFloatArray();
    assertArrayEquals(straight, decodeResumingEveryStep(z, null, dir));
  }

  @Test
  void tiledDecodeWithCutHalosIsBitIdenticalToUntiled() {
    Tensor z = randomLatents(new Random(11), TALL_SHAPE);
    int unit = vae.config().spatialCompression();
    DecodeTiling tiles = new DecodeTiling(4 * unit, TALL_SHAPE[4] * unit);
    assertTrue(
        TALL_SHAPE[3] > 4 + 2 * WanVaeDecoder.haloCells(vae.config()),
        "the middle tiles' halos are cut");
    float[] untiled = backend.download(vae.decode(z)).toFloatArray();
    assertArrayEquals(untiled, backend.download(vae.decodeTiled(z, tiles)).toFloatArray());
  }

  @Test
  void goldenLatentsDecodeInTilesExactlyAsUntiledAlsoWhenResumed(@TempDir Path dir) {
    Tensor z = input("z");
    int unit = vae.config().spatialCompression();
    DecodeTiling tiles = new DecodeTiling(2 * unit, 3 * unit);
    Tensor tiled = vae.decodeTiled(z, tiles);
    float[] untiled = backend.download(vae.decode(z)).toFloatArray();
    assertArrayEquals(untiled, backend.download(tiled).toFloatArray());
    assertWithinGolden("decoded", tiled);
    assertArrayEquals(untiled, decodeResumingEveryStep(z, tiles, dir));
  }

  @Test
  void normalisationUsesTheCheckpointsOwnLatentStatistics() {
    Tensor z = input("z");
    float[] raw = z.toFloatArray();
    float[] normalized = backend.download(vae.normalize(z)).toFloatArray();
    int cells = z.dim(2) * z.dim(3) * z.dim(4);
    for (int i = 0; i < raw.length; i++) {
      int c = i / cells;
      double mean = vae.config().latentsMean().get(c);
      double std = vae.config().latentsStd().get(c);
      assertEquals((raw[i] - mean) / std, normalized[i], 1e-5);
    }
  }

  /**
   * Decodes {@code z}, after every step writing the state to a safetensors file, reading it back
   * and continuing from the restored copy: the decoder's first-chunk handling lives in the cache
   * flags, so it must survive the round trip.
   */
  private static float[] decodeResumingEveryStep(Tensor z, DecodeTiling tiling, Path dir) {
    DecodeState state = vae.startDecode(z, tiling);
    Path file = dir.resolve("decode.safetensors");
    int steps = 0;
    while (vae.step(state)) {
      steps++;
      Map<String, Tensor> host = new HashMap<>();
      state.tensors().forEach((k, v) -> host.put(k, backend.download(v)));
      Safetensors.write(file, host, state.scalars());
      Map<String, Tensor> tensors = new HashMap<>();
      Map<String, String> scalars;
      try (SafetensorsFile stored = SafetensorsFile.open(file)) {
        for (String key : stored.keys()) {
          tensors.put(key, backend.upload(stored.loadF32(key), DType.F32));
        }
        scalars = new HashMap<>(stored.metadata());
      }
      state = vae.restoreDecode(z, tiling, tensors, scalars);
      assertEquals(steps, state.stepsDone());
    }
    assertEquals(state.totalSteps(), steps + 1);
    return backend.download(vae.finish(state)).toFloatArray();
  }

  private static Tensor randomLatents(Random random, int[] shape) {
    float[] values = new float[(int) Tensor.numel(shape)];
    for (int i = 0; i < values.length; i++) {
      values[i] = (float) random.nextGaussian();
    }
    return backend.upload(Tensor.of(values, shape), DType.F32);
  }

  private static void assertWithinGolden(String name, Tensor actual) {
    Tensor want = expected.load(name).toF32();
    Tensor got = backend.download(actual);
    assertArrayEquals(want.shape(), got.shape(), name + " shape");
    float[] w = want.toFloatArray();
    float[] g = got.toFloatArray();
    float worst = 0f;
    for (int i = 0; i < w.length; i++) {
      worst = Math.max(worst, Math.abs(w[i] - g[i]));
    }
    System.out.printf("wan22 vae %s: max abs error %.3g (bound %.1g)%n", name, worst, TOLERANCE);
    assertTrue(worst <= TOLERANCE, name + ": max abs error " + worst + " > " + TOLERANCE);
  }
}
