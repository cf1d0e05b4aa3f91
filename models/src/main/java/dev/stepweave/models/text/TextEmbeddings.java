package dev.stepweave.models.text;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The text-conditioning step of the Wan pipelines: prompts → tokens padded to {@code
 * max_sequence_length} → UMT5 → each row cut to its real length and zero-padded back. The zeroing
 * matters: the DiT cross-attends to all {@code max_sequence_length} positions without a mask, so
 * padding must contribute zero vectors rather than the encoder's outputs at pad tokens.
 */
public final class TextEmbeddings {
  private static final Pattern WHITESPACE_RUN = Pattern.compile("(?U)\\s+");

  private TextEmbeddings() {}

  /**
   * Embeds {@code prompts} for conditioning.
   *
   * @return {@code [B, maxSequenceLength, d_model]} on the encoder's backend
   */
  public static Tensor encodePrompts(
      PromptTokenizer tokenizer, UMT5Encoder encoder, List<String> prompts, int maxSequenceLength) {
    return embed(encoder, tokenize(tokenizer, prompts, maxSequenceLength), maxSequenceLength);
  }

  /** The cleaned prompts' token ids and attention mask, padded to {@code maxSequenceLength}. */
  public static PromptTokenizer.TokenBatch tokenize(
      PromptTokenizer tokenizer, List<String> prompts, int maxSequenceLength) {
    List<String> cleaned = prompts.stream().map(TextEmbeddings::cleanPrompt).toList();
    return tokenizer.encode(cleaned, maxSequenceLength);
  }

  /**
   * Embeds tokenised prompts for conditioning.
   *
   * @return {@code [B, maxSequenceLength, d_model]} on the encoder's backend
   */
  public static Tensor embed(
      UMT5Encoder encoder, PromptTokenizer.TokenBatch tokens, int maxSequenceLength) {
    Backend backend = encoder.backend();
    int batch = tokens.inputIds().dim(0);
    Tensor hidden = encoder.encode(tokens.inputIds(), tokens.attentionMask());
    long[] mask = tokens.attentionMask().toLongArray();
    List<Tensor> rows = new ArrayList<>(batch);
    for (int row = 0; row < batch; row++) {
      int realLength = 0;
      for (int s = 0; s < maxSequenceLength; s++) {
        realLength += mask[row * maxSequenceLength + s] > 0 ? 1 : 0;
      }
      Tensor kept = hidden.select(0, row).slice(0, 0, realLength);
      int[] zeroRowsAfter = {0, 0, 0, maxSequenceLength - realLength};
      rows.add(backend.pad(kept, zeroRowsAfter, 0f).unsqueeze(0));
    }
    return backend.concat(rows, 0);
  }

  /**
   * The pipeline's prompt cleaning, whitespace part: runs of whitespace become one space, ends are
   * trimmed. (The reference also unescapes HTML entities and, when the ftfy package is installed,
   * repairs mis-encoded text; neither is done here.)
   */
  static String cleanPrompt(String prompt) {
    return WHITESPACE_RUN.matcher(prompt).replaceAll(" ").strip();
  }
}
