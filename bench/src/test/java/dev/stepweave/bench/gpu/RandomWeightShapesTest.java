package dev.stepweave.bench.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** The random-weight timing models have exactly the golden checkpoint's names and shapes. */
class RandomWeightShapesTest {
  private static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");

  @Test
  void transformerShapesMatchTheGoldenCheckpoint() {
    Path dir = TINY.resolve("transformer");
    assertMatches(dir, WanDitShapes.of(WanTransformerConfig.read(dir.resolve("config.json"))));
  }

  /** TrainStepBench's embedded DiT is the shipped low-noise expert (the larger share of steps). */
  @Test
  void theEmbeddedConfigIsTheShippedOne() throws Exception {
    String resource = "/dev/stepweave/models/wan/embedded/trained/transformer_2/config.json";
    try (InputStream in = EmbeddedWan.class.getResourceAsStream(resource)) {
      ObjectNode shipped = (ObjectNode) new ObjectMapper().readTree(in);
      assertEquals(WanTransformerConfig.fromJson(shipped), Bench.config("embedded-gpu"));
    }
  }

  @Test
  void imageToVideoTransformerShapesMatchTheI2vGoldenCheckpoint() {
    assertTransformerMatches("wan21-i2v-tiny");
  }

  @Test
  void perTokenTimestepTransformerShapesMatchTheTi2vGoldenCheckpoint() {
    assertTransformerMatches("wan22-ti2v-tiny");
  }

  private static void assertTransformerMatches(String checkpoint) {
    Path dir = Path.of(System.getProperty("stepweave.golden"), checkpoint, "transformer");
    assertMatches(dir, WanDitShapes.of(WanTransformerConfig.read(dir.resolve("config.json"))));
  }

  @Test
  void vaeShapesMatchTheGoldenCheckpoint() {
    Path dir = TINY.resolve("vae");
    assertMatches(dir, WanVaeShapes.of(WanVaeConfig.read(dir.resolve("config.json"))));
  }

  @Test
  void residualVaeShapesMatchTheWan22GoldenCheckpoint() {
    Path dir = Path.of(System.getProperty("stepweave.golden"), "wan22-ti2v-tiny", "vae");
    assertMatches(dir, WanVaeShapes.of(WanVaeConfig.read(dir.resolve("config.json"))));
  }

  private static void assertMatches(Path dir, Map<String, int[]> shapes) {
    try (SafetensorsFile f =
        SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"))) {
      assertEquals(new TreeSet<>(f.keys()), new TreeSet<>(shapes.keySet()));
      for (String key : f.keys()) {
        assertArrayEquals(f.info(key).shape(), shapes.get(key), key);
      }
    }
  }
}
