package dev.stepweave.models.wan.transformer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

class WanTransformerConfigTest {

  private static String rejection(ObjectNode json) {
    return assertThrows(IllegalArgumentException.class, () -> WanTransformerConfig.fromJson(json))
        .getMessage();
  }

  @Test
  void otherQueryKeyNormsAreRejected() {
    ObjectNode json = TinyWanCheckpoint.configJson();
    json.put("qk_norm", "rms_norm");
    assertEquals(
        "qk_norm 'rms_norm' is not supported (only 'rms_norm_across_heads')", rejection(json));
  }

  @Test
  void imageToVideoConfigsAreRejected() {
    ObjectNode json = TinyWanCheckpoint.configJson();
    json.put("image_dim", 1280);
    assertTrue(rejection(json).startsWith("image-to-video (image_dim) is not supported"));

    ObjectNode added = TinyWanCheckpoint.configJson();
    added.put("added_kv_proj_dim", 1280);
    assertTrue(rejection(added).contains("added_kv_proj_dim"));
  }

  @Test
  void missingDimensionIsNamed() {
    ObjectNode json = TinyWanCheckpoint.configJson();
    json.remove("text_dim");
    assertEquals("missing 'text_dim'", rejection(json));
  }

  @Test
  void nullOutChannelsFallsBackToInChannels() {
    ObjectNode json = TinyWanCheckpoint.configJson();
    json.put("in_channels", 36);
    json.putNull("out_channels");
    assertEquals(36, WanTransformerConfig.fromJson(json).outChannels());
  }
}
