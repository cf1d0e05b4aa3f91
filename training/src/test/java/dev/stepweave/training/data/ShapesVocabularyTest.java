package dev.stepweave.training.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.text.PromptTokenizer;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.training.shapes.ShapeCaption;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded model's word-level tokenizer knows every word of every shapes caption: none becomes
 * {@code <unk>}, so a text encoder trained on shapes sees each attribute as its own token.
 */
class ShapesVocabularyTest {
  private static final long UNK = 2;
  private static final long EOS = 1;

  @TempDir Path home;

  @Test
  void everyCaptionWordIsInTheEmbeddedVocabulary() {
    try (PromptTokenizer tokenizer =
        PromptTokenizer.load(EmbeddedWan.ensure(home).resolve("tokenizer"))) {
      for (ShapeCaption c : ShapeCaption.all()) {
        long[] ids = tokenizer.encode(java.util.List.of(c.text()), 16).inputIds().toLongArray();
        int words = c.text().split(" ").length;
        for (int i = 0; i < words; i++) {
          assertTrue(ids[i] != UNK && ids[i] > EOS, c.text() + ": word " + i + " is id " + ids[i]);
        }
        assertEquals(EOS, ids[words], c.text());
      }
    }
  }
}
