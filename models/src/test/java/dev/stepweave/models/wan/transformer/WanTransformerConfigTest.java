package dev.stepweave.models.wan.transformer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.io.CheckpointException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
  void theImageToVideoConfigParsesItsImageConditioning() {
    WanTransformerConfig cfg =
        WanTransformerConfig.fromJson(TinyWanCheckpoint.configJson(TinyWanCheckpoint.I2V));
    assertEquals(new WanTransformerConfig.ImageConditioning(24, 32, null), cfg.image());
    assertEquals(36, cfg.inChannels());
    assertNull(WanTransformerConfig.fromJson(TinyWanCheckpoint.configJson()).image());

    ObjectNode flf2v = TinyWanCheckpoint.configJson(TinyWanCheckpoint.I2V);
    flf2v.put("pos_embed_seq_len", 514);
    assertEquals(514, WanTransformerConfig.fromJson(flf2v).image().posEmbedSeqLen());
  }

  @Test
  void halfAnImageConditioningIsRejected() {
    ObjectNode noProjections = TinyWanCheckpoint.configJson(TinyWanCheckpoint.I2V);
    noProjections.putNull("added_kv_proj_dim");
    assertEquals(
        "'image_dim' without 'added_kv_proj_dim' is not supported: image tokens need both the image"
            + " embedder and the added key/value projections",
        rejection(noProjections));

    ObjectNode noEmbedder = TinyWanCheckpoint.configJson(TinyWanCheckpoint.I2V);
    noEmbedder.remove("image_dim");
    assertTrue(rejection(noEmbedder).startsWith("'added_kv_proj_dim' without 'image_dim'"));

    ObjectNode positionsOnly = TinyWanCheckpoint.configJson();
    positionsOnly.put("pos_embed_seq_len", 514);
    assertEquals(
        "'pos_embed_seq_len' is 514 but there is no image_dim to embed", rejection(positionsOnly));
  }

  @Test
  void addedProjectionsOfAnotherWidthThanTheModelAreRejected() {
    ObjectNode json = TinyWanCheckpoint.configJson(TinyWanCheckpoint.I2V);
    json.put("added_kv_proj_dim", 24);
    assertEquals(
        "'added_kv_proj_dim' 24 must be the inner width num_attention_heads * attention_head_dim ="
            + " 32 (add_k_proj and add_v_proj read the embedded image tokens)",
        rejection(json));
  }

  @Test
  void malformedImageFieldsAreNamed() {
    ObjectNode json = TinyWanCheckpoint.configJson(TinyWanCheckpoint.I2V);
    json.put("image_dim", "1280");
    assertEquals("'image_dim' must be an integer, got \"1280\"", rejection(json));

    ObjectNode negative = TinyWanCheckpoint.configJson(TinyWanCheckpoint.I2V);
    negative.put("pos_embed_seq_len", -2);
    assertEquals("'pos_embed_seq_len' must be positive, got -2", rejection(negative));
  }

  @Test
  void anUnknownFieldIsRejectedAndBookkeepingIsNot() {
    ObjectNode json = TinyWanCheckpoint.configJson();
    json.put("add_img_emb", true);
    assertEquals(
        "field 'add_img_emb' (true) is not a WanTransformer3DModel setting this runtime implements",
        rejection(json));

    ObjectNode bookkeeping = TinyWanCheckpoint.configJson();
    bookkeeping.put("_name_or_path", "somewhere");
    assertEquals(16, WanTransformerConfig.fromJson(bookkeeping).inChannels());
  }

  @Test
  void aFileErrorIsOneLineNamingTheFile(@TempDir Path dir) throws IOException {
    ObjectNode json = TinyWanCheckpoint.configJson(TinyWanCheckpoint.TI2V);
    json.put("expand_timesteps", true);
    Path file = dir.resolve("config.json");
    Files.writeString(file, json.toString());
    String message =
        assertThrows(CheckpointException.class, () -> WanTransformerConfig.read(file)).getMessage();
    assertEquals(
        file
            + ": field 'expand_timesteps' (true) is not a WanTransformer3DModel setting this"
            + " runtime implements",
        message);
    assertFalse(message.contains("\n"));
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
