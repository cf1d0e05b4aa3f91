package dev.stepweave.models.wan.embedded;

import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import dev.stepweave.core.card.CardJson;
import dev.stepweave.core.card.ConsistencyRung;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.models.wan.WanCards;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.Safetensors;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes the embedded model as a diffusers {@code WanPipeline} directory, laid out exactly as a
 * {@code Wan2.1-T2V-1.3B-Diffusers} download: configs from {@link EmbeddedConfigs}, tensors from
 * the component layouts filled by {@link SeededValues}, stored as F32, and the word-level
 * tokenizer.
 */
final class EmbeddedCheckpoint {
  /** Seed of every weight; changing it (or any dimension) needs a new format version. */
  static final long SEED = 0x5745_4156_4557_414eL;

  private static final Map<String, String> SAFETENSORS_METADATA = Map.of("format", "pt");
  private static final ObjectWriter JSON_WRITER =
      new ObjectMapper()
          .writer(
              new DefaultPrettyPrinter()
                  .withSeparators(
                      Separators.createDefaultInstance()
                          .withObjectFieldValueSpacing(Separators.Spacing.AFTER))
                  .withObjectIndenter(new DefaultIndenter("  ", "\n")));

  private EmbeddedCheckpoint() {}

  /** Writes every file of the checkpoint into {@code dir}, which must exist. */
  static void writeTo(Path dir) {
    List<String> vocabulary = WordTokenizer.vocabulary();
    SeededValues values = new SeededValues(SEED);

    writeJson(dir.resolve("model_index.json"), EmbeddedConfigs.modelIndex());
    writeJson(dir.resolve("scheduler/scheduler_config.json"), EmbeddedConfigs.scheduler());
    writeJson(dir.resolve("tokenizer/tokenizer.json"), WordTokenizer.tokenizerJson(vocabulary));
    writeJson(dir.resolve("tokenizer/tokenizer_config.json"), EmbeddedConfigs.tokenizerConfig());

    JsonNode transformer = EmbeddedConfigs.transformer();
    writeJson(dir.resolve("transformer/config.json"), transformer);
    writeTensors(
        dir.resolve("transformer/diffusion_pytorch_model.safetensors"),
        TransformerLayout.tensors(transformer),
        values);

    JsonNode vae = EmbeddedConfigs.vae();
    writeJson(dir.resolve("vae/config.json"), vae);
    writeTensors(
        dir.resolve("vae/diffusion_pytorch_model.safetensors"), VaeLayout.tensors(vae), values);

    JsonNode textEncoder = EmbeddedConfigs.textEncoder(vocabulary.size());
    writeJson(dir.resolve("text_encoder/config.json"), textEncoder);
    writeTensors(
        dir.resolve("text_encoder/model.safetensors"), Umt5Layout.tensors(textEncoder), values);
    writeCard(dir);
  }

  /** The card: imported components, a recipe that says what these weights are, small defaults. */
  private static void writeCard(Path dir) {
    ModelCard imported = WanCards.importDiffusers(DiffusersDirectory.open(dir));
    RecipeSpec recipe =
        new RecipeSpec(
            "base",
            List.of(),
            "stepweave embedded " + EmbeddedWan.FORMAT + ": deterministic, untrained weights",
            null,
            null,
            null,
            null,
            ConsistencyRung.C3);
    ModelCard card =
        WanCards.card(EmbeddedWan.MODEL_ID, imported.components(), recipe, EmbeddedWan.DEFAULTS);
    try {
      CardJson.write(card, dir.resolve(CardJson.FILE_NAME));
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("cannot write " + dir.resolve(CardJson.FILE_NAME), e);
    }
  }

  private static void writeTensors(Path file, List<TensorSpec> specs, SeededValues values) {
    Map<String, Tensor> tensors = new LinkedHashMap<>();
    for (TensorSpec spec : specs) {
      if (tensors.put(spec.name(), values.materialise(spec)) != null) {
        throw new IllegalStateException(file + ": tensor " + spec.name() + " laid out twice");
      }
    }
    createParent(file);
    Safetensors.write(file, tensors, SAFETENSORS_METADATA);
  }

  private static void writeJson(Path file, JsonNode tree) {
    createParent(file);
    try {
      Files.writeString(file, JSON_WRITER.writeValueAsString(tree) + "\n", StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(file + ": cannot write", e);
    }
  }

  private static void createParent(Path file) {
    try {
      Files.createDirectories(file.getParent());
    } catch (IOException e) {
      throw new UncheckedIOException(file.getParent() + ": cannot create", e);
    }
  }
}
