package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.card.ComponentKind;
import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.DiffusersDirectory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Wan import never guesses: every field of {@code model_index.json} and the configs it does not
 * implement is a one-line error naming the file and the field — above all a Wan2.2 checkpoint,
 * which would otherwise load and generate with its first transformer only. The variants are the
 * golden tiny checkpoint's files with one field changed as the Wan2.2 and I2V checkpoints have it
 * (weights are not needed: the import reads only the JSON).
 */
class WanImportTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static final Path I2V = Path.of(System.getProperty("stepweave.golden"), "wan21-i2v-tiny");

  @TempDir Path dir;

  /**
   * The tiny golden checkpoint's JSON files and component folders (copied afresh each time), with
   * {@code file} edited by {@code edit}.
   */
  private Path variant(String file, Consumer<ObjectNode> edit) throws IOException {
    return variant(ResumeInNewProcessTest.CHECKPOINT, file, edit);
  }

  /** {@link #variant(String, Consumer)} of the checkpoint at {@code source}. */
  private Path variant(Path source, String file, Consumer<ObjectNode> edit) throws IOException {
    try (Stream<Path> all = Files.walk(source)) {
      for (Path p : all.toList()) {
        Path target = dir.resolve(source.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else if (p.toString().endsWith(".json")) {
          Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
        }
      }
    }
    Path edited = dir.resolve(file);
    ObjectNode node = (ObjectNode) JSON.readTree(edited.toFile());
    edit.accept(node);
    JSON.writeValue(edited.toFile(), node);
    return edited;
  }

  private static String refusal(Path dir) {
    return assertThrows(
            CheckpointException.class, () -> WanCards.importDiffusers(DiffusersDirectory.open(dir)))
        .getMessage();
  }

  @Test
  void theGoldenT2vCheckpointImports() throws IOException {
    variant("model_index.json", n -> {});
    assertEquals(3, WanCards.importDiffusers(DiffusersDirectory.open(dir)).loops().size());
    assertEquals(
        Set.of(TaskType.T2V, TaskType.T2I),
        WanCards.importDiffusers(DiffusersDirectory.open(dir)).tasks());
  }

  @Test
  void twoExpertsImportTogetherAndEitherAloneIsRefusedNamingTheFileAndTheField()
      throws IOException {
    var expert = JSON.createArrayNode().add("diffusers").add("WanTransformer3DModel");
    Path index =
        variant(
            "model_index.json",
            n -> {
              n.set("transformer_2", expert);
              n.put("boundary_ratio", 0.875);
            });
    Files.createDirectories(dir.resolve("transformer_2"));
    Files.copy(
        dir.resolve("transformer/config.json"),
        dir.resolve("transformer_2/config.json"),
        StandardCopyOption.REPLACE_EXISTING);
    var card = WanCards.importDiffusers(DiffusersDirectory.open(dir));
    assertEquals(
        List.of("transformer", "transformer_2", "scheduler"),
        card.loops().get(WanCards.DENOISE).components());
    variant("model_index.json", n -> n.set("transformer_2", expert));
    assertEquals(
        index
            + ": component 'transformer_2' needs a boundary_ratio (when to switch to it); there"
            + " is none",
        refusal(dir));
    variant(
        "model_index.json",
        n -> {
          n.remove("transformer_2");
          n.put("boundary_ratio", 0.875);
        });
    assertEquals(
        index
            + ": boundary_ratio 0.875 switches to a second expert, but there is no component"
            + " 'transformer_2'",
        refusal(dir));
    variant(
        "model_index.json",
        n -> {
          n.set("transformer_2", expert);
          n.put("boundary_ratio", 1.5);
        });
    assertEquals(
        index + ": boundary_ratio must be a number between 0 and 1, got 1.5", refusal(dir));
  }

  private static final Path TI2V =
      Path.of(System.getProperty("stepweave.golden"), "wan22-ti2v-tiny");

  @Test
  void theWan22Ti2vCheckpointImportsAsATi2vCardWithTheVaeEncode() throws IOException {
    variant(TI2V, "model_index.json", n -> {});
    ModelCard card = WanCards.importDiffusers(DiffusersDirectory.open(dir));
    assertEquals(Set.of(TaskType.TI2V), card.tasks());
    assertEquals(
        List.of(WanCards.TEXT_ENCODE, WanCards.VAE_ENCODE, WanCards.DENOISE, WanCards.VAE_DECODE),
        card.loopsFor(TaskType.TI2V));
    card.checkpoint()
        .components()
        .forEach((id, r) -> assertEquals(Set.of(TaskType.TI2V), r.requiredFor(), id));
    assertEquals(WanCards.TI2V_720P, card.defaults());
  }

  @Test
  void perTokenTimestepsOutsideTheTi2vLayoutAreRefusedInOneLine() throws IOException {
    // The Wan2.1 VAE with expand_timesteps.
    Path index = variant("model_index.json", n -> n.put("expand_timesteps", true));
    String vae = dir.resolve("vae/config.json").toString();
    assertEquals(
        index
            + ": expand_timesteps=true (Wan2.2 TI2V) is served only with the Wan2.2 VAE, but "
            + vae
            + " has is_residual=false",
        refusal(dir));
    // expand_timesteps through the image-to-video pipeline class.
    index = variant(TI2V, "model_index.json", n -> n.put("_class_name", "WanImageToVideoPipeline"));
    assertEquals(
        index
            + ": expand_timesteps=true with WanImageToVideoPipeline is not supported (the Wan2.2"
            + " TI2V layout is WanPipeline, which also serves the image mode)",
        refusal(dir));
    // Another transformer patch than the mask is made for.
    Path transformer =
        variant(
            TI2V,
            "transformer/config.json",
            n -> n.set("patch_size", JSON.createArrayNode().add(1).add(1).add(1)));
    assertEquals(
        transformer
            + ": patch_size [1, 1, 1] with expand_timesteps (per-token timesteps, the first latent"
            + " frame's tokens masked) needs [1, 2, 2]",
        refusal(dir));
  }

  @Test
  void anImageEncoderOnATextToVideoPipelineIsRefused() throws IOException {
    Path index =
        variant(
            "model_index.json",
            n ->
                n.set(
                    "image_encoder",
                    JSON.createArrayNode().add("transformers").add("CLIPVisionModel")));
    Files.createDirectories(dir.resolve("image_encoder"));
    assertEquals(
        index
            + ": component 'image_encoder' (CLIPVisionModel) is not supported by a WanPipeline"
            + " (image conditioning needs WanImageToVideoPipeline)",
        refusal(dir));
  }

  @Test
  void anUnknownFieldIsRefused() throws IOException {
    Path index = variant("model_index.json", n -> n.put("motion_bucket", 3));
    assertEquals(
        index + ": field 'motion_bucket' (3) is not implemented by the Wan import", refusal(dir));
  }

  @Test
  void theWan22VaeAndImageConditioningInTheConfigsAreRefusedNamingTheirFiles() throws IOException {
    Path vae = variant("vae/config.json", n -> n.put("is_residual", true));
    assertEquals(
        vae
            + ": is_residual=true (the Wan2.2 VAE) is served only in the Wan2.2 TI2V layout, with"
            + " expand_timesteps=true in "
            + dir.resolve("model_index.json"),
        refusal(dir));
    Path transformer = variant("transformer/config.json", n -> n.put("pos_embed_seq_len", 514));
    assertEquals(
        transformer + ": 'pos_embed_seq_len' is 514 but there is no image_dim to embed",
        refusal(dir));
  }

  @Test
  void anImageConditionedTransformerOnATextToVideoPipelineIsRefused() throws IOException {
    Path transformer =
        variant(
            "transformer/config.json",
            n -> n.put("in_channels", 36).put("image_dim", 24).put("added_kv_proj_dim", 32));
    assertEquals(
        transformer
            + ": image_dim 24 attends to image-encoder states, but a WanPipeline gives none"
            + " (image conditioning is WanImageToVideoPipeline)",
        refusal(dir));
  }

  @Test
  void aTextToVideoCardServesT2vAndT2iAndRequiresEveryComponentForBoth() throws IOException {
    variant("model_index.json", n -> {});
    ModelCard card = WanCards.importDiffusers(DiffusersDirectory.open(dir));
    assertEquals(Set.of(TaskType.T2V, TaskType.T2I), card.tasks());
    card.checkpoint()
        .components()
        .forEach(
            (id, r) -> {
              assertEquals(Set.of(TaskType.T2V, TaskType.T2I), r.requiredFor(), id);
              assertEquals(Set.of(), r.optionalFor(), id);
            });
  }

  @Test
  void theWan21I2vCheckpointImportsAsAnImageToVideoCard() throws IOException {
    variant(I2V, "model_index.json", n -> {});
    ModelCard card = WanCards.importDiffusers(DiffusersDirectory.open(dir));
    assertEquals(Set.of(TaskType.I2V), card.tasks());
    assertEquals(
        List.of(
            WanCards.TEXT_ENCODE,
            WanCards.IMAGE_ENCODE,
            WanCards.VAE_ENCODE,
            WanCards.DENOISE,
            WanCards.VAE_DECODE),
        card.loopsFor(TaskType.I2V));
    assertEquals(ComponentKind.IMAGE_ENCODER, card.components().get(WanCards.IMAGE_ENCODER).kind());
    assertEquals(
        ComponentKind.IMAGE_PROCESSOR, card.components().get(WanCards.IMAGE_PROCESSOR).kind());
    assertEquals(
        List.of(WanCards.IMAGE_PROCESSOR, WanCards.IMAGE_ENCODER),
        card.loops().get(WanCards.IMAGE_ENCODE).components());
    assertEquals(card.components().keySet(), card.checkpoint().components().keySet());
    card.checkpoint()
        .components()
        .forEach((id, r) -> assertEquals(Set.of(TaskType.I2V), r.requiredFor(), id));
    // diffusers' WanImageToVideoPipeline.__call__ defaults: 832x480, 81 frames, 50 steps,
    // guidance 5; its examples export at 16 fps.
    assertEquals(GenerationDefaults.WAN_480P, card.defaults());
  }

  @Test
  void aTwoExpertI2vCheckpointWithoutAnImageEncoderImportsWithTheConditionAlone()
      throws IOException {
    var expert = JSON.createArrayNode().add("diffusers").add("WanTransformer3DModel");
    withoutImageEncoder(
        n -> {
          n.set("transformer_2", expert);
          n.put("boundary_ratio", 0.9);
        });
    Files.createDirectories(dir.resolve("transformer_2"));
    Files.copy(
        dir.resolve("transformer/config.json"),
        dir.resolve("transformer_2/config.json"),
        StandardCopyOption.REPLACE_EXISTING);
    ModelCard card = WanCards.importDiffusers(DiffusersDirectory.open(dir));
    assertEquals(Set.of(TaskType.I2V), card.tasks());
    assertEquals(
        List.of(WanCards.TEXT_ENCODE, WanCards.VAE_ENCODE, WanCards.DENOISE, WanCards.VAE_DECODE),
        card.loopsFor(TaskType.I2V));
    assertEquals(
        List.of("transformer", "transformer_2", "scheduler"),
        card.loops().get(WanCards.DENOISE).components());
  }

  /** The I2V checkpoint without its image encoder and processor, its transformer without them. */
  private Path withoutImageEncoder(Consumer<ObjectNode> editIndex) throws IOException {
    variant(
        I2V,
        "transformer/config.json",
        n -> {
          n.remove("image_dim");
          n.remove("added_kv_proj_dim");
        });
    Path index = dir.resolve("model_index.json");
    ObjectNode node = (ObjectNode) JSON.readTree(index.toFile());
    node.remove(WanCards.IMAGE_ENCODER);
    node.remove(WanCards.IMAGE_PROCESSOR);
    editIndex.accept(node);
    JSON.writeValue(index.toFile(), node);
    return index;
  }

  @Test
  void everyOtherImageToVideoCombinationIsRefusedNamingTheFileAndTheField() throws IOException {
    Path index = variant(I2V, "model_index.json", n -> n.remove(WanCards.IMAGE_PROCESSOR));
    assertEquals(
        index + ": component 'image_encoder' needs 'image_processor', which is missing",
        refusal(dir));
    Path transformer =
        variant(
            I2V,
            "transformer/config.json",
            n -> {
              n.remove("image_dim");
              n.remove("added_kv_proj_dim");
            });
    assertEquals(
        transformer
            + ": no image_dim, but the checkpoint has an image_encoder whose states the"
            + " transformer would never read",
        refusal(dir));
    variant(
        I2V,
        "model_index.json",
        n -> {
          n.remove(WanCards.IMAGE_ENCODER);
          n.remove(WanCards.IMAGE_PROCESSOR);
        });
    assertEquals(
        transformer
            + ": image_dim 24 attends to image-encoder states, but the checkpoint has no"
            + " image_encoder",
        refusal(dir));
    variant(I2V, "transformer/config.json", n -> n.put("in_channels", 16));
    assertEquals(
        transformer
            + ": in_channels 16 does not fit image-to-video: the noise, the mask and the condition"
            + " latents are 16 + 4 + 16 = 36",
        refusal(dir));
    variant(I2V, "transformer/config.json", n -> n.put("image_dim", 32));
    assertEquals(
        transformer
            + ": image_dim 32 does not match the image encoder's hidden_size 24 ("
            + dir.resolve("image_encoder/config.json")
            + ")",
        refusal(dir));
    Path processor =
        variant(
            I2V,
            "image_processor/preprocessor_config.json",
            n -> n.set("crop_size", JSON.createObjectNode().put("height", 16).put("width", 16)));
    assertEquals(
        processor
            + ": crop_size 16x16 must be the image encoder's image_size 32 (do_center_crop on)",
        refusal(dir));
  }

  @Test
  void anUnknownTransformerFieldIsRefusedNamingTheFile() throws IOException {
    Path transformer = variant("transformer/config.json", n -> n.put("window_size", 3));
    assertEquals(
        transformer
            + ": field 'window_size' (3) is not a WanTransformer3DModel setting this runtime"
            + " implements",
        refusal(dir));
  }
}
