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
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes the embedded model as a diffusers {@code WanPipeline} directory, laid out as a Wan 2.2
 * two-expert download ({@code transformer} for the high-noise steps, {@code transformer_2} for the
 * rest, switched at {@code boundary_ratio}) with Wan 2.1's VAE and scheduler. The two transformers
 * and the VAE are the ones this project trained ({@code training/configs/embedded-vae-stills.yaml},
 * then {@code embedded-dit-gpu-big6.yaml} for {@code transformer_2} and {@code
 * embedded-dit-gpu-hi8.yaml} for {@code transformer}), shipped as resources under {@value #TRAINED}
 * and copied byte for byte; the text encoder, which those runs kept frozen, is written from {@link
 * EmbeddedConfigs} and the layouts filled by {@link SeededValues}, stored as F32, beside the
 * word-level tokenizer.
 */
final class EmbeddedCheckpoint {
  /**
   * Seed of the text encoder's weights, which the shipped transformer was trained against: changing
   * it (or any of its dimensions) needs retraining and a new format version.
   */
  static final long SEED = 0x5745_4156_4557_414eL;

  /** Resource folder, beside this class, of the trained components and their training cards. */
  static final String TRAINED = "trained/";

  /** The components trained here; their config and weights files are shipped verbatim. */
  private static final List<String> TRAINED_COMPONENTS =
      List.of("transformer", "transformer_2", "vae");

  private static final List<String> TRAINED_FILES =
      List.of("config.json", "diffusion_pytorch_model.safetensors");

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

    for (String component : TRAINED_COMPONENTS) {
      for (String file : TRAINED_FILES) {
        copyResource(TRAINED + component + "/" + file, dir.resolve(component).resolve(file));
      }
    }

    JsonNode textEncoder = EmbeddedConfigs.textEncoder(vocabulary.size());
    writeJson(dir.resolve("text_encoder/config.json"), textEncoder);
    writeTensors(
        dir.resolve("text_encoder/model.safetensors"), Umt5Layout.tensors(textEncoder), values);
    writeCard(dir);
  }

  /**
   * The card: imported components, small defaults, and the recipe of the training run that made the
   * high-noise transformer (the last stage; its card names the data, the parent weights and the
   * config's hash), its provenance extended by the other two stages'.
   */
  private static void writeCard(Path dir) {
    ModelCard imported = WanCards.importDiffusers(DiffusersDirectory.open(dir));
    RecipeSpec transformer = trainedRecipe("transformer-card.json");
    RecipeSpec lowNoise = trainedRecipe("transformer_2-card.json");
    RecipeSpec vae = trainedRecipe("vae-card.json");
    RecipeSpec recipe =
        new RecipeSpec(
            transformer.method(),
            transformer.parents(),
            "stepweave embedded "
                + EmbeddedWan.FORMAT
                + ": trained here from fresh weights; transformer (t >= "
                + Math.round(EmbeddedConfigs.BOUNDARY_RATIO * 1000)
                + ", sigma 0.85-1): "
                + transformer.provenance()
                + "; transformer_2 (the other steps): "
                + lowNoise.provenance()
                + "; vae: "
                + vae.provenance(),
            null,
            null,
            null,
            null,
            ConsistencyRung.C3,
            transformer.parentWeights(),
            transformer.data(),
            null);
    ModelCard card =
        WanCards.card(EmbeddedWan.MODEL_ID, imported.components(), recipe, EmbeddedWan.DEFAULTS);
    try {
      CardJson.write(card, dir.resolve(CardJson.FILE_NAME));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + dir.resolve(CardJson.FILE_NAME), e);
    }
  }

  private static RecipeSpec trainedRecipe(String cardResource) {
    try (InputStream in = resource(TRAINED + cardResource)) {
      return CardJson.fromJson(
              new String(in.readAllBytes(), StandardCharsets.UTF_8), TRAINED + cardResource)
          .recipe();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the resource " + TRAINED + cardResource, e);
    }
  }

  private static void copyResource(String name, Path file) {
    createParent(file);
    try (InputStream in = resource(name)) {
      Files.copy(in, file);
    } catch (IOException e) {
      throw new UncheckedIOException(file + ": cannot write from the resource " + name, e);
    }
  }

  private static InputStream resource(String name) {
    InputStream in = EmbeddedCheckpoint.class.getResourceAsStream(name);
    if (in == null) {
      // Only a broken build gets here: the trained files are part of the module.
      throw new IllegalStateException("the embedded model's resource " + name + " is missing");
    }
    return in;
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
