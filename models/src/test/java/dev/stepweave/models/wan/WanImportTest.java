package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.DiffusersDirectory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Wan T2V import never guesses: every field of {@code model_index.json} and the configs it does
 * not implement is a one-line error naming the file and the field — above all a Wan2.2 checkpoint,
 * which would otherwise load and generate with its first transformer only. The variants are the
 * golden tiny checkpoint's files with one field changed as the Wan2.2 and I2V checkpoints have it
 * (weights are not needed: the import reads only the JSON).
 */
class WanImportTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  /**
   * The tiny golden checkpoint's JSON files and component folders (copied afresh each time), with
   * {@code file} edited by {@code edit}.
   */
  private Path variant(String file, Consumer<ObjectNode> edit) throws IOException {
    Path source = ResumeInNewProcessTest.CHECKPOINT;
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

  @Test
  void perTokenTimestepsAreRefused() throws IOException {
    Path index = variant("model_index.json", n -> n.put("expand_timesteps", true));
    assertEquals(
        index + ": expand_timesteps=true (per-token timesteps, Wan2.2 TI2V) is not supported yet",
        refusal(dir));
  }

  @Test
  void anImageEncoderIsRefused() throws IOException {
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
            + ": component 'image_encoder' (CLIPVisionModel) is not supported yet (image"
            + " conditioning, Wan2.1 I2V)",
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
            + ": is_residual=true (the Wan 2.2 VAE, of Wan2.2 TI2V checkpoints) is not supported"
            + " by the Wan import yet",
        refusal(dir));
    Path transformer = variant("transformer/config.json", n -> n.put("pos_embed_seq_len", 514));
    assertEquals(
        transformer + ": 'pos_embed_seq_len' is 514 but there is no image_dim to embed",
        refusal(dir));
  }

  @Test
  void anImageConditionedTransformerIsRefusedUntilTheImportHasImageToVideo() throws IOException {
    // The transformer itself runs image tokens (WanTransformerParityTest); the card has no image
    // encoder or I2V task to feed it yet.
    Path transformer =
        variant(
            "transformer/config.json",
            n -> n.put("in_channels", 36).put("image_dim", 24).put("added_kv_proj_dim", 32));
    assertEquals(
        transformer
            + ": image_dim 24 (image-token conditioning, Wan2.1 I2V) is not supported by the Wan"
            + " import yet",
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
