package dev.stepweave.models.wan.vae;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.GoldenBounds;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** C0 parity of the Wan 2.1 VAE against the diffusers recording of the tiny checkpoint. */
class WanVaeParityTest {
  /** The golden bound for VAE outputs (golden/README.md); never loosen it. */
  private static final double TOLERANCE = GoldenBounds.maxAbs("vae");

  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));

  private static Backend backend;
  private static SafetensorsFile weightsFile;
  private static SafetensorsFile expected;
  private static WanVae vae;

  @BeforeAll
  static void load() {
    backend = new CpuBackend(2);
    Path dir = GOLDEN.resolve("wan21-tiny/vae");
    weightsFile = SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"));
    expected = SafetensorsFile.open(GOLDEN.resolve("wan21-tiny-expected/vae.safetensors"));
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
    assertClose("latent_mean", posterior.mean());
    assertClose("latent_logvar", posterior.logvar());
  }

  @Test
  void decodeMatchesReferenceVideo() {
    assertClose("decoded", vae.decode(input("z")));
  }

  @Test
  void interleavedDecodesAreIdenticalToOneAtATime() {
    Tensor z = input("z");
    Tensor alone = backend.download(vae.decode(z));

    DecodeState first = vae.startDecode(z);
    DecodeState second = vae.startDecode(z);
    int steps = 0;
    while (!first.isDone()) {
      boolean firstMore = vae.step(first);
      boolean secondMore = vae.step(second);
      assertEquals(firstMore, secondMore);
      steps++;
    }
    assertEquals(z.dim(2), steps);
    assertFalse(second.decoded().isEmpty());
    assertTrue(second.isDone());
    assertArrayEquals(alone.toFloatArray(), backend.download(vae.finish(first)).toFloatArray());
    assertArrayEquals(alone.toFloatArray(), backend.download(vae.finish(second)).toFloatArray());
  }

  @Test
  void encodeRunsOneChunkPerStep() {
    Tensor video = input("video");
    EncodeState state = vae.startEncode(video);
    assertEquals(1 + (video.dim(2) - 1) / EncodeState.CHUNK_FRAMES, state.chunkCount());
    int steps = 0;
    boolean more;
    do {
      more = vae.step(state);
      steps++;
      assertEquals(steps, state.encoded().size());
    } while (more);
    assertEquals(state.chunkCount(), steps);
    Posterior posterior = vae.finish(state);
    assertClose("latent_mean", posterior.mean());
  }

  @Test
  void denormalizeInvertsNormalize() {
    Tensor z = input("z");
    float[] raw = z.toFloatArray();
    float[] back = backend.download(vae.denormalize(vae.normalize(z))).toFloatArray();
    for (int i = 0; i < raw.length; i++) {
      assertEquals(raw[i], back[i], 1e-5f);
    }
  }

  private static void assertClose(String name, Tensor actual) {
    assertClose(expected.load(name).toF32(), actual, name);
  }

  private static void assertClose(Tensor want, Tensor actual, String name) {
    Tensor got = backend.download(actual);
    assertArrayEquals(want.shape(), got.shape(), name + " shape");
    float[] w = want.toFloatArray();
    float[] g = got.toFloatArray();
    float worst = 0f;
    for (int i = 0; i < w.length; i++) {
      worst = Math.max(worst, Math.abs(w[i] - g[i]));
    }
    assertTrue(worst <= TOLERANCE, name + ": max abs error " + worst + " > " + TOLERANCE);
  }
}
