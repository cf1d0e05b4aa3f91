package dev.stepweave.models.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.io.CheckpointException;
import org.junit.jupiter.api.Test;

class UMT5ConfigTest {
  @Test
  void readsTheCheckpointConfig() {
    UMT5Config c = UMT5Config.read(TextGoldens.checkpoint().resolve("text_encoder/config.json"));
    assertEquals(new UMT5Config(24, 8, 40, 3, 2, 32, 128, 1e-6f, 64, true), c);
    assertEquals(24, c.innerDim());
  }

  @Test
  void rejectsOtherFeedForwardsInOneLine() {
    for (String proj : new String[] {"relu", "gated-silu", "gelu"}) {
      ObjectNode config = golden();
      config.put("feed_forward_proj", proj);
      CheckpointException e =
          assertThrows(CheckpointException.class, () -> UMT5Config.fromJson(config, "config.json"));
      assertTrue(e.getMessage().contains("feed_forward_proj '" + proj + "'"), e.getMessage());
      assertTrue(!e.getMessage().contains("\n"), e.getMessage());
    }
  }

  @Test
  void acceptsTheExplicitTanhGeluSpelling() {
    ObjectNode config = golden();
    config.put("feed_forward_proj", "gated-gelu_new");
    assertEquals(24, UMT5Config.fromJson(config, "config.json").dModel());
  }

  @Test
  void namesAMissingDimension() {
    ObjectNode config = golden();
    config.remove("num_heads");
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> UMT5Config.fromJson(config, "config.json"));
    assertEquals(
        "config.json: 'num_heads' must be a positive integer, got nothing", e.getMessage());
  }

  private static ObjectNode golden() {
    try {
      return (ObjectNode)
          new ObjectMapper()
              .readTree(TextGoldens.checkpoint().resolve("text_encoder/config.json").toFile());
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }
}
