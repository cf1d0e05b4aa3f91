package dev.stepweave.models.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PromptTokenizerTest {
  private static PromptTokenizer tokenizer;

  @BeforeAll
  static void open() {
    tokenizer = PromptTokenizer.load(TextGoldens.checkpoint().resolve("tokenizer"));
  }

  @AfterAll
  static void close() {
    tokenizer.close();
  }

  @Test
  void reproducesThePipelinePromptIds() {
    try (SafetensorsFile pipeline =
        SafetensorsFile.open(TextGoldens.expected("pipeline.safetensors"))) {
      String prompt = pipeline.metadata().get("prompt");
      int maxLength = Integer.parseInt(pipeline.metadata().get("max_sequence_length"));
      PromptTokenizer.TokenBatch batch = tokenizer.encode(List.of(prompt), maxLength);
      assertEquals(DType.I64, batch.inputIds().dtype());
      assertArrayEquals(new int[] {1, maxLength}, batch.inputIds().shape());
      assertArrayEquals(pipeline.load("prompt_ids").toLongArray(), batch.inputIds().toLongArray());
    }
  }

  @Test
  void appendsEndOfSequenceAndPadsWithTheMaskOff() {
    PromptTokenizer.TokenBatch batch = tokenizer.encode(List.of("A Red cube", "dog"), 6);
    // word-level vocab: a=3 red=6 cube=13 dog=15, </s>=1, <pad>=0
    assertArrayEquals(
        new long[] {3, 6, 13, 1, 0, 0, 15, 1, 0, 0, 0, 0}, batch.inputIds().toLongArray());
    assertArrayEquals(
        new long[] {1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0}, batch.attentionMask().toLongArray());
  }

  @Test
  void truncationKeepsRoomForEndOfSequence() {
    PromptTokenizer.TokenBatch batch =
        tokenizer.encode(List.of("a red ball bouncing on the grass"), 4);
    assertArrayEquals(new long[] {3, 6, 12, 1}, batch.inputIds().toLongArray());
    assertArrayEquals(new long[] {1, 1, 1, 1}, batch.attentionMask().toLongArray());
  }

  @Test
  void lengthsAboveModelMaxLengthAreHonoured() {
    // tokenizer_config.json says model_max_length 512; transformers pads to an explicit larger one.
    PromptTokenizer.TokenBatch batch = tokenizer.encode(List.of("cat"), 600);
    assertArrayEquals(new int[] {1, 600}, batch.inputIds().shape());
  }

  @Test
  void unknownWordsBecomeTheUnknownToken() {
    assertArrayEquals(
        new long[] {14, 2, 1}, tokenizer.encode(List.of("cat zebra"), 3).inputIds().toLongArray());
  }

  @Test
  void keepsTheLibraryOfflineWithItsNativeCacheInAKnownPlace() {
    tokenizer.encode(List.of("a"), 2); // the native library loads with the first tokenizer
    assertEquals("true", System.getProperty(OfflineTokenizerLibrary.OFFLINE_PROPERTY));
    assertEquals("true", System.getProperty(OfflineTokenizerLibrary.TRACKING_PROPERTY));
    String cacheDir =
        System.getenv(OfflineTokenizerLibrary.CACHE_DIR_PROPERTY) != null
            ? System.getenv(OfflineTokenizerLibrary.CACHE_DIR_PROPERTY)
            : System.getProperty(OfflineTokenizerLibrary.CACHE_DIR_PROPERTY);
    try (var files = Files.walk(Path.of(cacheDir))) {
      assertTrue(
          files.anyMatch(p -> p.getFileName().toString().startsWith("libtokenizers")),
          "the bundled native library was extracted into " + cacheDir);
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aDirectoryWithoutTokenizerJsonFailsInOneLine(@TempDir Path empty) {
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> PromptTokenizer.load(empty));
    assertEquals(empty + ": no tokenizer.json found", e.getMessage());
  }

  @Test
  void aCorruptTokenizerJsonNamesTheFile(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("tokenizer.json"), "{\"model\": 42}");
    try (PromptTokenizer broken = PromptTokenizer.load(dir)) {
      CheckpointException e =
          assertThrows(CheckpointException.class, () -> broken.encode(List.of("a"), 4));
      assertTrue(
          e.getMessage().startsWith(dir.resolve("tokenizer.json") + ": cannot load tokenizer"));
    }
  }
}
