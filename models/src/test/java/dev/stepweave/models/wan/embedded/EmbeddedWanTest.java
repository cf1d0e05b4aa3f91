package dev.stepweave.models.wan.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.card.CardJson;
import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.ModelCard;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EmbeddedWanTest {
  private static final List<String> CHECKPOINT_FILES =
      List.of(
          "model_index.json",
          "scheduler/scheduler_config.json",
          "card.json",
          "text_encoder/config.json",
          "text_encoder/model.safetensors",
          "tokenizer/tokenizer.json",
          "tokenizer/tokenizer_config.json",
          "transformer/config.json",
          "transformer/diffusion_pytorch_model.safetensors",
          "transformer_2/config.json",
          "transformer_2/diffusion_pytorch_model.safetensors",
          "vae/config.json",
          "vae/diffusion_pytorch_model.safetensors");

  @TempDir Path tmp;

  @Test
  void writesADiffusersWanCheckpointUnderTheVersionedName() throws IOException {
    Path dir = EmbeddedWan.ensure(tmp);

    assertEquals(tmp.resolve("models").resolve(EmbeddedWan.FORMAT), dir);
    Set<String> expected = new TreeSet<>(CHECKPOINT_FILES);
    expected.add(AtomicDirectory.COMPLETE_MARKER);
    assertEquals(expected, hashes(dir).keySet());
    JsonNode index = json(dir.resolve("model_index.json"));
    assertEquals("WanPipeline", index.get("_class_name").asText());
    assertEquals("UMT5EncoderModel", index.get("text_encoder").get(1).asText());
    // Two experts, as a Wan 2.2 download names them: the high-noise one first.
    assertEquals("WanTransformer3DModel", index.get("transformer_2").get(1).asText());
    assertEquals(EmbeddedConfigs.BOUNDARY_RATIO, index.get("boundary_ratio").doubleValue());
    ModelCard card = CardJson.read(dir.resolve("card.json"));
    assertEquals(EmbeddedWan.MODEL_ID, card.modelId());
    assertEquals(EmbeddedWan.DEFAULTS, card.defaults());
    // The recipe is the training run's: its data and parent weights recorded, its provenance naming
    // the three trained components.
    assertEquals("full", card.recipe().method());
    assertTrue(card.recipe().data() != null && card.recipe().parentWeights() != null);
    String provenance = card.recipe().provenance();
    assertTrue(
        provenance.contains("transformer (t >= 875, sigma 0.85-1): stepweave train")
            && provenance.contains("transformer_2 (the other steps): stepweave train")
            && provenance.contains("vae: stepweave train"),
        provenance);
  }

  @Test
  void twoGenerationsAreByteIdentical() throws IOException {
    Map<String, String> first = hashes(EmbeddedWan.ensure(tmp.resolve("a")));
    Map<String, String> second = hashes(EmbeddedWan.ensure(tmp.resolve("b")));
    assertEquals(first, second);
  }

  @Test
  void theTextEncoderVocabularyIsTheTokenizers() throws IOException {
    Path dir = EmbeddedWan.ensure(tmp);
    JsonNode vocab = json(dir.resolve("tokenizer/tokenizer.json")).get("model").get("vocab");
    JsonNode encoder = json(dir.resolve("text_encoder/config.json"));

    assertTrue(vocab.size() > 2500, "a few thousand words, got " + vocab.size());
    assertEquals(vocab.size(), encoder.get("vocab_size").intValue());
    for (String expert : List.of("transformer", "transformer_2")) {
      JsonNode transformer = json(dir.resolve(expert + "/config.json"));
      assertEquals(
          encoder.get("d_model").intValue(), transformer.get("text_dim").intValue(), expert);
    }
    assertEquals(0, vocab.get("<pad>").intValue());
    assertEquals(1, vocab.get("</s>").intValue());
    assertEquals(2, vocab.get("<unk>").intValue());
  }

  @Test
  void aSecondCallReusesTheCompleteDirectory() throws IOException {
    Path dir = EmbeddedWan.ensure(tmp);
    Path weights = dir.resolve("transformer/diffusion_pytorch_model.safetensors");
    Files.writeString(weights, "left alone");

    assertEquals(dir, EmbeddedWan.ensure(tmp));
    assertEquals("left alone", Files.readString(weights));
  }

  @Test
  void anIncompleteDirectoryIsReplacedNotUsed() throws IOException {
    Path dir = tmp.resolve("models").resolve(EmbeddedWan.FORMAT);
    Files.createDirectories(dir.resolve("transformer"));
    Files.writeString(dir.resolve("transformer/config.json"), "{ half writ");

    Map<String, String> hashes = hashes(EmbeddedWan.ensure(tmp));

    assertEquals(hashes(EmbeddedWan.ensure(tmp.resolve("fresh"))), hashes);
  }

  @Test
  void concurrentFirstUsesAllSeeOneCompleteCopy() throws Exception {
    Map<String, String> reference = hashes(EmbeddedWan.ensure(tmp.resolve("reference")));
    Path root = tmp.resolve("shared");
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Path>> results = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        results.add(pool.submit(() -> EmbeddedWan.ensure(root)));
      }
      for (Future<Path> r : results) {
        assertEquals(reference, hashes(r.get()));
      }
    } finally {
      pool.shutdown();
    }
    try (Stream<Path> leftovers = Files.list(root.resolve("models"))) {
      assertEquals(
          List.of(EmbeddedWan.FORMAT), leftovers.map(p -> p.getFileName().toString()).toList());
    }
  }

  @Test
  void cacheRootFollowsStepweaveHomeThenXdgThenHome() {
    Path home = Path.of("/home/someone");
    assertEquals(
        Path.of("/opt/sw"),
        EmbeddedWan.cacheRoot(Map.of("STEPWEAVE_HOME", "/opt/sw", "XDG_CACHE_HOME", "/x"), home));
    assertEquals(
        Path.of("/x/stepweave"), EmbeddedWan.cacheRoot(Map.of("XDG_CACHE_HOME", "/x"), home));
    assertEquals(Path.of("/home/someone/.cache/stepweave"), EmbeddedWan.cacheRoot(Map.of(), home));
  }

  @Test
  void defaultsFitTheArchitecture() {
    GenerationDefaults d = EmbeddedWan.DEFAULTS;
    // 4x VAE compression then 4x4 patches; no temporal compression, so any frame count.
    assertEquals(0, d.width() % 16);
    assertEquals(0, d.height() % 16);
    assertFalse(d.steps() < 1 || d.fps() < 1 || d.guidance() < 1);
  }

  private static JsonNode json(Path file) throws IOException {
    return new ObjectMapper().readTree(file.toFile());
  }

  /** SHA-256 of every file under {@code dir}, keyed by relative path. */
  static Map<String, String> hashes(Path dir) throws IOException {
    Map<String, String> out = new TreeMap<>();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        out.put(dir.relativize(f).toString(), sha256(f));
      }
    }
    return out;
  }

  private static String sha256(Path file) {
    try {
      return HexFormat.of()
          .formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
