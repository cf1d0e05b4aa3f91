package dev.stepweave.models.wan.transformer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import org.junit.jupiter.api.Test;

/** Strict loading: a config that disagrees with the checkpoint fails with one precise line. */
class WanTransformerLoadTest {

  private static CheckpointException loadFails(ObjectNode configJson) {
    DiffusersDirectory.Component component = TinyWanCheckpoint.transformer();
    WanTransformerConfig cfg = WanTransformerConfig.fromJson(configJson);
    try (TensorSource weights = component.openWeights()) {
      return assertThrows(
          CheckpointException.class,
          () -> WanTransformer.load(cfg, new Weights(weights, new CpuBackend(), DType.F32)));
    }
  }

  @Test
  void ffnWidthThatDisagreesWithTheWeightsNamesFileAndTensor() {
    ObjectNode json = TinyWanCheckpoint.configJson();
    json.put("ffn_dim", json.get("ffn_dim").intValue() + 8);

    String message = loadFails(json).getMessage();

    assertTrue(message.contains("diffusion_pytorch_model.safetensors"), message);
    assertTrue(message.contains("'blocks.0.ffn.net.0.proj.weight'"), message);
    assertFalse(message.contains("\n"), message);
  }

  @Test
  void fewerLayersThanTheCheckpointLeavesUnexpectedTensors() {
    ObjectNode json = TinyWanCheckpoint.configJson();
    json.put("num_layers", json.get("num_layers").intValue() - 1);

    String message = loadFails(json).getMessage();

    assertTrue(message.contains("unexpected tensor 'blocks.1."), message);
    assertFalse(message.contains("\n"), message);
  }

  @Test
  void headCountThatDisagreesWithTheWeightsFails() {
    ObjectNode json = TinyWanCheckpoint.configJson();
    json.put("num_attention_heads", json.get("num_attention_heads").intValue() * 2);

    String message = loadFails(json).getMessage();

    assertTrue(message.contains("'patch_embedding.weight'"), message);
  }

  @Test
  void goldenConfigParses() {
    WanTransformerConfig cfg =
        WanTransformerConfig.fromJson(TinyWanCheckpoint.transformer().config());
    assertEquals(cfg.numAttentionHeads() * cfg.attentionHeadDim(), cfg.innerDim());
    assertEquals(new WanTransformerConfig.PatchSize(1, 2, 2), cfg.patchSize());
  }
}
