package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import dev.stepweave.models.wan.vae.DecodeTiling;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The {@code vae_decode} overrides {@code tile} and {@code tile_size}. */
class VaeDecodeTilingTest {
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));

  private static SafetensorsFile weightsFile;
  private static WanVae vae;

  @BeforeAll
  static void load() {
    Path dir = GOLDEN.resolve("wan21-tiny/vae");
    weightsFile = SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"));
    vae =
        WanVae.load(
            WanVaeConfig.read(dir.resolve("config.json")),
            new Weights(weightsFile, new CpuBackend(1), DType.F32));
  }

  @AfterAll
  static void close() {
    weightsFile.close();
  }

  @Test
  void autoTilesOnlyLargeFrames() {
    assertNull(VaeDecodeLoop.tiling(request(832, 480, Map.of()), vae));
    assertEquals(DecodeTiling.standard(), VaeDecodeLoop.tiling(request(1280, 720, Map.of()), vae));
  }

  @Test
  void onAndOffOverrideTheFrameSize() {
    assertEquals(
        new DecodeTiling(128, 128),
        VaeDecodeLoop.tiling(request(64, 64, Map.of("tile", "on", "tile_size", "128")), vae));
    assertNull(VaeDecodeLoop.tiling(request(1280, 720, Map.of("tile", "off")), vae));
  }

  @Test
  void badOverridesAreRefusedNamingTheSetting() {
    assertRefused(Map.of("tile", "sometimes"), "tile must be on, off or auto");
    assertRefused(
        Map.of("tile", "on", "tile_size", "100"), "tile_size must be a positive multiple");
    assertRefused(Map.of("tile", "on", "tile_size", "0"), "tile_size must be a positive multiple");
    assertRefused(Map.of("tile", "on", "tile_size", "big"), "tile_size must be an integer");
  }

  private static void assertRefused(Map<String, String> overrides, String message) {
    var e =
        assertThrows(
            InvalidRequestException.class,
            () -> VaeDecodeLoop.tiling(request(64, 64, overrides), vae));
    assertTrue(e.getMessage().contains(message), e.getMessage());
  }

  private static Request request(int width, int height, Map<String, String> overrides) {
    var params =
        new DiffusionParams(
            2, 5.0, 0, width, height, 5, 16, "", Optional.empty(), Optional.empty());
    return Request.builder(TaskType.T2V, params)
        .id("tiling")
        .prompt("a cat")
        .nodeOverrides(Map.of(WanCards.VAE_DECODE, overrides))
        .build();
  }
}
