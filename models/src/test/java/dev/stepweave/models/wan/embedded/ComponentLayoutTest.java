package dev.stepweave.models.wan.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The layouts, fed the golden checkpoint's configs (other dimensions than the embedded model's),
 * must name exactly the tensors the reference stack wrote, with the same shapes.
 */
class ComponentLayoutTest {
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");

  @Test
  void transformerLayoutMatchesTheReferenceCheckpoint() throws IOException {
    assertSameTensors(
        "transformer/config.json",
        "transformer/diffusion_pytorch_model.safetensors",
        TransformerLayout::tensors);
  }

  @Test
  void vaeLayoutMatchesTheReferenceCheckpoint() throws IOException {
    assertSameTensors(
        "vae/config.json", "vae/diffusion_pytorch_model.safetensors", VaeLayout::tensors);
  }

  @Test
  void umt5LayoutMatchesTheReferenceCheckpoint() throws IOException {
    assertSameTensors(
        "text_encoder/config.json", "text_encoder/model.safetensors", Umt5Layout::tensors);
  }

  private static void assertSameTensors(
      String config, String weights, Function<JsonNode, List<TensorSpec>> layout)
      throws IOException {
    JsonNode json = new ObjectMapper().readTree(GOLDEN.resolve(config).toFile());
    TreeMap<String, String> expected = new TreeMap<>();
    try (SafetensorsFile file = SafetensorsFile.open(GOLDEN.resolve(weights))) {
      for (String key : file.keys()) {
        TensorSource.TensorInfo info = file.info(key);
        expected.put(key, Arrays.toString(info.shape()));
      }
    }
    TreeMap<String, String> actual = new TreeMap<>();
    for (TensorSpec spec : layout.apply(json)) {
      actual.put(spec.name(), Arrays.toString(spec.shape()));
    }
    assertEquals(expected, actual, weights);
  }
}
