package dev.stepweave.models.wan.vae;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.models.GoldenBounds;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tiled decode is exact: every output pixel sees the same inputs in the same order as in the
 * untiled decode, so tiles must reproduce it (the card's VAE bound would allow 5e-4; the CPU
 * backend's per-position arithmetic makes it bit-identical). Resuming a decode from its serialised
 * state after any step must not change a bit.
 */
class TiledDecodeTest {
  private static final double TOLERANCE = GoldenBounds.maxAbs("vae");
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));

  /**
   * 26 latent rows: more than a 4-row tile plus two tiny-model halos, so halos get cut; narrow, to
   * keep the test quick (column seams are covered by the golden latents).
   */
  private static final int[] TALL_SHAPE = {1, 16, 3, 26, 2};

  /** 4 latent rows across the whole width: 7 tile rows, the last 2 high. */
  private static final DecodeTiling TALL_TILES = new DecodeTiling(32, 16);

  private static final int TALL_TILE_ROWS = 4;

  /** A small frame for resuming: 2 × 2 tiles of 3 latent cells, the last row and column smaller. */
  private static final int[] SMALL_SHAPE = {1, 16, 3, 5, 4};

  private static final DecodeTiling SMALL_TILES = new DecodeTiling(24, 24);

  private static Backend backend;
  private static SafetensorsFile weightsFile;
  private static SafetensorsFile expected;
  private static WanVae vae;
  private static Tensor goldenZ;
  private static Tensor tallZ;
  private static Tensor smallZ;
  private static SteppedDecode tallTiled;

  /** A decode's video and, per step, the input shapes of its conv3d calls. */
  private record SteppedDecode(Tensor video, List<List<int[]>> conv3dInputs) {}

  /** The input shapes of the conv3d calls since the last clear. */
  private static final List<int[]> conv3dInputs = Collections.synchronizedList(new ArrayList<>());

  @BeforeAll
  static void load() {
    Backend cpu = new CpuBackend(2);
    backend = recordingConv3dInputs(cpu);
    Path dir = GOLDEN.resolve("wan21-tiny/vae");
    weightsFile = SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"));
    vae =
        WanVae.load(
            WanVaeConfig.read(dir.resolve("config.json")),
            new Weights(weightsFile, backend, DType.F32));
    expected = SafetensorsFile.open(GOLDEN.resolve("wan21-tiny-expected/vae.safetensors"));
    goldenZ = backend.upload(expected.load("z"), DType.F32);
    Random random = new Random(7);
    tallZ = randomLatents(random, TALL_SHAPE);
    smallZ = randomLatents(random, SMALL_SHAPE);
  }

  private static Tensor randomLatents(Random random, int[] shape) {
    float[] values = new float[(int) Tensor.numel(shape)];
    for (int i = 0; i < values.length; i++) {
      values[i] = (float) random.nextGaussian();
    }
    return backend.upload(Tensor.of(values, shape), DType.F32);
  }

  @AfterAll
  static void close() {
    expected.close();
    weightsFile.close();
  }

  private static Backend recordingConv3dInputs(Backend delegate) {
    return (Backend)
        Proxy.newProxyInstance(
            Backend.class.getClassLoader(),
            new Class<?>[] {Backend.class},
            (proxy, method, args) -> {
              if (method.getName().equals("conv3d")) {
                conv3dInputs.add(((Tensor) args[0]).shape());
              }
              try {
                return method.invoke(delegate, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  @Test
  void haloCoversTheReachOfTheUpsamplingStack() {
    // Tiny model (num_res_blocks 1, four stages): conv_out 1; last stage 4 convs → 5; upsampler
    // conv → 6, halved → 3; +4 → 7; +1 → 8, halved → 4; +4 → 8; +1 → 9, halved → 5; +4 → 9.
    assertEquals(9 + 1, WanVaeDecoder.haloCells(vae.config()));
    // Wan 2.1 (num_res_blocks 2): 1 +6 → 7; +1 → 8 → 4; +6 → 10; +1 → 11 → 6; +6 → 12;
    // +1 → 13 → 7; +6 → 13.
    WanVaeConfig wan21 = WanVaeConfig.fromJson(new ObjectMapper().createObjectNode());
    assertEquals(13 + 1, WanVaeDecoder.haloCells(wan21));
  }

  @Test
  void goldenLatentsDecodeInTilesExactlyAsUntiled() {
    Tensor untiled = backend.download(vae.decode(goldenZ));
    Tensor tiled = backend.download(vae.decodeTiled(goldenZ, new DecodeTiling(16, 24)));
    assertArrayEquals(untiled.shape(), tiled.shape());
    assertArrayEquals(untiled.toFloatArray(), tiled.toFloatArray());
    assertWithinGolden(expected.load("decoded").toF32(), tiled);
  }

  @Test
  void randomLatentsDecodeInTilesWithCutHalosExactlyAsUntiled() {
    Tensor untiled = backend.download(vae.decode(tallZ));
    Tensor tiled = tallTiled().video();
    assertWithinGolden(untiled, tiled);
    assertArrayEquals(untiled.toFloatArray(), tiled.toFloatArray());
  }

  @Test
  void aTileStepConvolvesOnlyItsWindowAtEachResolution() {
    int latentHeight = TALL_SHAPE[3];
    int latentWidth = TALL_SHAPE[4];
    int halo = WanVaeDecoder.haloCells(vae.config());
    List<List<int[]>> steps = tallTiled().conv3dInputs();
    int tiles = (latentHeight + TALL_TILE_ROWS - 1) / TALL_TILE_ROWS;
    assertEquals(TALL_SHAPE[2] * tiles, steps.size());
    int maxHeightSeen = 0;
    for (int step = 0; step < steps.size(); step++) {
      int tile = step % tiles;
      int top = tile * TALL_TILE_ROWS;
      int window = Math.min(latentHeight, top + TALL_TILE_ROWS + halo) - Math.max(0, top - halo);
      Set<Integer> heights = new LinkedHashSet<>();
      Set<Integer> widths = new LinkedHashSet<>();
      for (int scale = 1; scale <= vae.config().spatialCompression(); scale *= 2) {
        heights.add(window * scale);
        widths.add(latentWidth * scale);
      }
      if (tile == 0) { // the frame's global part: the whole frame at latent resolution
        heights.add(latentHeight);
      }
      assertTrue(steps.get(step).size() > 0);
      for (int[] shape : steps.get(step)) {
        assertTrue(heights.contains(shape[3]), "step " + step + " convolved height " + shape[3]);
        assertTrue(widths.contains(shape[4]), "step " + step + " convolved width " + shape[4]);
        maxHeightSeen = Math.max(maxHeightSeen, shape[3]);
      }
    }
    int frameHeight = latentHeight * vae.config().spatialCompression();
    assertTrue(maxHeightSeen < frameHeight, "a tile convolved " + maxHeightSeen + " rows");
  }

  @Test
  void progressCountsOneStepPerTileOfEachFrame() {
    DecodeState untiled = vae.startDecode(goldenZ);
    assertEquals(1, untiled.tilesPerFrame());
    assertEquals(goldenZ.dim(2), untiled.totalSteps());
    DecodeState tiled = vae.startDecode(smallZ, SMALL_TILES);
    assertEquals(2 * 2, tiled.tilesPerFrame());
    assertEquals(3 * 2 * 2, tiled.totalSteps());
    assertEquals(0, tiled.stepsDone());
    vae.step(tiled);
    assertEquals(1, tiled.stepsDone());
    assertEquals(0, tiled.nextFrame());
    assertTrue(tiled.decoded().isEmpty());
  }

  @Test
  void untiledDecodeResumesBitIdenticallyAfterEveryStep(@TempDir Path dir) {
    Tensor straight = backend.download(vae.decode(goldenZ));
    assertArrayEquals(straight.toFloatArray(), decodeResumingEveryStep(goldenZ, null, dir));
  }

  @Test
  void tiledDecodeResumesBitIdenticallyAfterEveryStep(@TempDir Path dir) {
    Tensor straight = backend.download(vae.decodeTiled(smallZ, SMALL_TILES));
    assertArrayEquals(straight.toFloatArray(), decodeResumingEveryStep(smallZ, SMALL_TILES, dir));
  }

  @Test
  void restoringUnderAnotherTilingIsRefused() {
    DecodeState state = vae.startDecode(smallZ, SMALL_TILES);
    vae.step(state);
    var e =
        assertThrows(
            IllegalArgumentException.class,
            () -> vae.restoreDecode(smallZ, null, state.tensors(), state.scalars()));
    assertTrue(e.getMessage().contains("tiles per frame"), e.getMessage());
  }

  @Test
  void tileSizesOffTheLatentGridAreRefused() {
    var e =
        assertThrows(
            IllegalArgumentException.class,
            () -> vae.startDecode(smallZ, new DecodeTiling(20, 16)));
    assertTrue(e.getMessage().contains("multiple"), e.getMessage());
  }

  /**
   * Decodes {@code z}, after every step writing the state to a safetensors file, reading it back
   * and continuing from the restored copy.
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

  /** The tiled decode of the tall latents, stepped once and shared by the tests that need it. */
  private static synchronized SteppedDecode tallTiled() {
    if (tallTiled == null) {
      DecodeState state = vae.startDecode(tallZ, TALL_TILES);
      List<List<int[]>> inputs = new ArrayList<>();
      while (!state.isDone()) {
        conv3dInputs.clear();
        vae.step(state);
        inputs.add(List.copyOf(conv3dInputs));
      }
      tallTiled = new SteppedDecode(backend.download(vae.finish(state)), inputs);
    }
    return tallTiled;
  }

  private static void assertWithinGolden(Tensor want, Tensor got) {
    assertArrayEquals(want.shape(), got.shape());
    float[] w = want.toFloatArray();
    float[] g = got.toFloatArray();
    float worst = 0f;
    for (int i = 0; i < w.length; i++) {
      worst = Math.max(worst, Math.abs(w[i] - g[i]));
    }
    assertTrue(worst <= TOLERANCE, "max abs difference " + worst + " > " + TOLERANCE);
  }
}
