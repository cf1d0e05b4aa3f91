package dev.stepweave.models.wan.lora;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.extend.AdapterInfo;
import dev.stepweave.core.extend.InvalidAdapterException;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Adapter files read against the tiny Wan transformer (dim 32, ffn 48, two blocks): what each
 * format gives, and the one-line error each bad file gets.
 */
class WanLoraFormatTest {
  static final Path CHECKPOINT = Path.of(System.getProperty("stepweave.golden"), "wan21-lora-tiny");
  private static WanModel model;
  @TempDir Path dir;

  @BeforeAll
  static void load() {
    model = WanModel.load(CHECKPOINT, new CpuBackend());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  @Test
  void theGoldenAdaptersReadAsTheirFormats() {
    AdapterInfo a =
        model.inspectAdapter(CHECKPOINT.resolve("loras/adapter_a_diffusers.safetensors"));
    assertEquals("diffusers", a.format());
    assertEquals(4, a.rank());
    assertEquals(20, a.targets().size()); // 2 blocks × (4 + 4 attention + 2 FFN)
    assertTrue(a.targets().contains("blocks.1.ffn.net.2"));
    AdapterInfo b =
        model.inspectAdapter(CHECKPOINT.resolve("loras/adapter_b_wan_original.safetensors"));
    assertEquals("wan", b.format());
    assertEquals(2, b.rank());
    assertEquals(
        List.of(
            "blocks.0.attn1.to_q",
            "blocks.0.attn1.to_v",
            "blocks.0.attn2.to_out.0",
            "blocks.0.ffn.net.0.proj",
            "blocks.1.attn1.to_q",
            "blocks.1.attn1.to_v",
            "blocks.1.attn2.to_out.0",
            "blocks.1.ffn.net.0.proj"),
        b.targets());
    assertEquals(Optional.empty(), b.recipe());
  }

  @Test
  void originalWanKeysCoverEmbeddingsHeadBiasesAndMusubiSpelling() {
    Map<String, Tensor> t = new LinkedHashMap<>();
    t.put("diffusion_model.time_projection.1.lora_down.weight", Tensor.zeros(f32(), 2, 32));
    t.put("diffusion_model.time_projection.1.lora_up.weight", Tensor.zeros(f32(), 192, 2));
    t.put("diffusion_model.time_projection.1.diff_b", Tensor.zeros(f32(), 192));
    t.put("diffusion_model.head.head.lora_down.weight", Tensor.zeros(f32(), 2, 32));
    t.put("diffusion_model.head.head.lora_up.weight", Tensor.zeros(f32(), 64, 2));
    t.put("diffusion_model.text_embedding.0.lora_down.weight", Tensor.zeros(f32(), 2, 24));
    t.put("diffusion_model.text_embedding.0.lora_up.weight", Tensor.zeros(f32(), 32, 2));
    t.put("diffusion_model.blocks.0.self_attn.norm_q.diff", Tensor.zeros(f32(), 32));
    AdapterInfo info = model.inspectAdapter(write("wan", t));
    assertEquals(
        List.of(
            "condition_embedder.text_embedder.linear_1",
            "condition_embedder.time_proj",
            "proj_out"),
        info.targets());
    Map<String, Tensor> musubi = new LinkedHashMap<>();
    musubi.put("lora_unet_blocks_1_cross_attn_k.lora_down.weight", Tensor.zeros(f32(), 3, 32));
    musubi.put("lora_unet_blocks_1_cross_attn_k.lora_up.weight", Tensor.zeros(f32(), 32, 3));
    musubi.put("lora_unet_blocks_1_cross_attn_k.alpha", Tensor.full(3f, 1));
    AdapterInfo m = model.inspectAdapter(write("musubi", musubi));
    assertEquals(List.of("blocks.1.attn2.to_k"), m.targets());
    assertEquals(3, m.rank());
  }

  @Test
  void everyBadFileGetsAOneLineErrorNamingTheKeyOrTensor() {
    assertRefused(
        Map.of(
            "transformer.blocks.0.attn1.to_q.lora_A.weight",
            Tensor.zeros(f32(), 4, 33),
            "transformer.blocks.0.attn1.to_q.lora_B.weight",
            Tensor.zeros(f32(), 32, 4)),
        "tensor 'transformer.blocks.0.attn1.to_q.lora_A.weight' has shape [4, 33], this model"
            + " needs [r, 32]");
    assertRefused(
        Map.of(
            "transformer.blocks.0.attn1.to_q.lora_A.weight",
            Tensor.zeros(f32(), 4, 32),
            "transformer.blocks.0.attn1.to_q.lora_B.weight",
            Tensor.zeros(f32(), 32, 3)),
        "tensor 'transformer.blocks.0.attn1.to_q.lora_B.weight' has shape [32, 3], this model"
            + " needs [32, 4]");
    assertRefused(
        Map.of("transformer.blocks.7.attn1.to_q.lora_A.weight", Tensor.zeros(f32(), 4, 32)),
        "key 'transformer.blocks.7.attn1.to_q.lora_A.weight' targets no layer of this transformer"
            + " ('blocks.7.attn1.to_q')");
    assertRefused(
        Map.of("transformer.blocks.0.attn1.to_q.lora_A.weight", Tensor.zeros(f32(), 4, 32)),
        "key 'transformer.blocks.0.attn1.to_q.lora_A.weight' has no matching up (B) factor");
    assertRefused(
        Map.of(
            "text_encoder.encoder.block.0.layer.0.SelfAttention.q.lora_A.weight",
            Tensor.zeros(f32(), 4, 24)),
        "key 'text_encoder.encoder.block.0.layer.0.SelfAttention.q.lora_A.weight' adapts the text"
            + " encoder; adapters apply to the transformer only");
    assertRefused(
        Map.of(
            "diffusion_model.blocks.0.cross_attn.k_img.lora_down.weight",
            Tensor.zeros(f32(), 2, 32)),
        "key 'diffusion_model.blocks.0.cross_attn.k_img.lora_down.weight' adapts image"
            + " cross-attention, which needs an I2V model");
    assertRefused(
        Map.of("diffusion_model.blocks.0.self_attn.q.lora_mid.weight", Tensor.zeros(f32(), 2, 32)),
        "unrecognised key 'diffusion_model.blocks.0.self_attn.q.lora_mid.weight'");
    assertRefused(
        Map.of("diffusion_model.blocks.0.self_attn.norm_k.diff", Tensor.full(0.5f, 32)),
        "norm delta 'diffusion_model.blocks.0.self_attn.norm_k.diff' is not zero; norm deltas are"
            + " not supported");
    assertRefused(
        Map.of(
            "diffusion_model.blocks.0.ffn.0.lora_down.weight",
            Tensor.zeros(f32(), 2, 32),
            "diffusion_model.blocks.0.ffn.0.lora_up.weight",
            Tensor.zeros(f32(), 48, 2),
            "diffusion_model.blocks.0.ffn.0.alpha",
            Tensor.zeros(f32(), 2)),
        "tensor 'diffusion_model.blocks.0.ffn.0.alpha' has shape [2], this model needs a scalar");
  }

  @Test
  void diffusersImageLayerKeysTargetAnImageConditionedTransformerOnly() {
    Map<String, Tensor> t =
        Map.of(
            "transformer.blocks.0.attn2.add_k_proj.lora_A.weight",
            Tensor.zeros(f32(), 2, 32),
            "transformer.blocks.0.attn2.add_k_proj.lora_B.weight",
            Tensor.zeros(f32(), 32, 2),
            "transformer.condition_embedder.image_embedder.ff.net.0.proj.lora_A.weight",
            Tensor.zeros(f32(), 2, 24),
            "transformer.condition_embedder.image_embedder.ff.net.0.proj.lora_B.weight",
            Tensor.zeros(f32(), 24, 2));
    Path file = write("image-layers", t);
    var e = assertThrows(InvalidAdapterException.class, () -> model.inspectAdapter(file));
    assertTrue(e.getMessage().endsWith("adapts image conditioning, which needs an I2V model"));

    var i2v =
        DiffusersDirectory.open(CHECKPOINT.resolveSibling("wan21-i2v-tiny"))
            .component("transformer");
    try (TensorSource weights = i2v.openWeights();
        TensorSource adapter = SafetensorsFile.open(file)) {
      WanTransformer transformer =
          WanTransformer.load(
              WanTransformerConfig.fromJson(i2v.config()),
              new Weights(weights, new CpuBackend(), f32()));
      assertEquals(
          Set.of("blocks.0.attn2.add_k_proj", "condition_embedder.image_embedder.ff.net.0.proj"),
          WanLoraFormat.read(adapter, transformer.adaptableLayers()).layers().keySet());
    }
  }

  @Test
  void metadataGivesThePeftScaleAndTheRecipeAndRefusesPatterns() {
    Map<String, Tensor> t =
        Map.of(
            "transformer.proj_out.lora_A.weight",
            Tensor.zeros(f32(), 4, 32),
            "transformer.proj_out.lora_B.weight",
            Tensor.zeros(f32(), 64, 4));
    Path withRecipe =
        write(
            "recipe",
            t,
            Map.of(
                "stepweave.recipe", "{\"method\": \"distill\", \"steps\": 4, \"shift\": 5.0}",
                "lora_adapter_metadata", "{\"r\": 4, \"lora_alpha\": 8}"));
    var recipe = model.inspectAdapter(withRecipe).recipe().orElseThrow();
    assertEquals("distill", recipe.method());
    assertEquals(4, recipe.steps());
    assertEquals(5.0, recipe.shift());
    Path patterned =
        write(
            "patterned",
            t,
            Map.of(
                "lora_adapter_metadata",
                "{\"r\": 4, \"lora_alpha\": 8, \"rank_pattern\": {\"x\": 2}}"));
    var e = assertThrows(InvalidAdapterException.class, () -> model.inspectAdapter(patterned));
    assertEquals(
        patterned + ": metadata 'lora_adapter_metadata.rank_pattern' is not supported",
        e.getMessage());
    Path badRecipe = write("bad", t, Map.of("stepweave.recipe", "{\"method\": \"d\", \"cfg\": 1}"));
    var r = assertThrows(InvalidAdapterException.class, () -> model.inspectAdapter(badRecipe));
    assertTrue(
        r.getMessage()
            .endsWith(
                "unknown recipe field 'cfg' (known: guidance, method, sampler, shift, steps)"),
        r.getMessage());
  }

  @Test
  void aFileThatIsNotSafetensorsIsRefused() throws Exception {
    Path pickle = dir.resolve("adapter.safetensors");
    java.nio.file.Files.write(pickle, new byte[] {(byte) 0x80, 0x02, 'c', 't', 'o', 'r', 'c', 'h'});
    var e = assertThrows(InvalidAdapterException.class, () -> model.inspectAdapter(pickle));
    assertTrue(e.getMessage().startsWith(pickle.toString()), e.getMessage());
    assertEquals(1, e.getMessage().lines().count());
  }

  private void assertRefused(Map<String, Tensor> tensors, String message) {
    Path file = write("bad-" + Math.abs(message.hashCode()), tensors);
    var e = assertThrows(InvalidAdapterException.class, () -> model.inspectAdapter(file));
    assertEquals(file + ": " + message, e.getMessage());
  }

  private Path write(String name, Map<String, Tensor> tensors) {
    return write(name, tensors, Map.of());
  }

  private Path write(String name, Map<String, Tensor> tensors, Map<String, String> metadata) {
    Path file = dir.resolve(name + ".safetensors");
    Safetensors.write(file, tensors, metadata);
    return file;
  }

  private static dev.stepweave.tensor.DType f32() {
    return dev.stepweave.tensor.DType.F32;
  }
}
