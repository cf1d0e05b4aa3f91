package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** The random-weight timing model has exactly the golden checkpoint's names and shapes. */
class WanDitShapesTest {
  private static final Path TRANSFORMER =
      Path.of(System.getProperty("stepweave.golden"), "wan21-tiny", "transformer");

  @Test
  void shapesMatchTheGoldenCheckpoint() {
    WanTransformerConfig cfg = WanTransformerConfig.read(TRANSFORMER.resolve("config.json"));
    Map<String, int[]> shapes = WanDitShapes.of(cfg);
    try (SafetensorsFile f =
        SafetensorsFile.open(TRANSFORMER.resolve("diffusion_pytorch_model.safetensors"))) {
      assertEquals(new TreeSet<>(f.keys()), new TreeSet<>(shapes.keySet()));
      for (String key : f.keys()) {
        assertArrayEquals(f.info(key).shape(), shapes.get(key), key);
      }
    }
  }
}
