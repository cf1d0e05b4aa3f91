package dev.stepweave.models.text;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
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
    Backend backend = encoder.backend();
    List<String> cleaned = prompts.stream().map(TextEmbeddings::cleanPrompt).toList();
    PromptTokenizer.TokenBatch tokens = tokenizer.encode(cleaned, maxSequenceLength);
    Tensor hidden = encoder.encode(tokens.inputIds(), tokens.attentionMask());
    return backend.mul(hidden, keepRealTokens(tokens.attentionMask(), backend));
  }

  /**
   * The pipeline's prompt cleaning, whitespace part: runs of whitespace become one space, ends are
   * trimmed. (The reference also unescapes HTML entities and, when the ftfy package is installed,
   * repairs mis-encoded text; neither is done here.)
   */
  static String cleanPrompt(String prompt) {
    return WHITESPACE_RUN.matcher(prompt).replaceAll(" ").strip();
  }

  /** {@code [B, S, 1]}: 1 for the first {@code sum(mask)} positions of each row, 0 after. */
  private static Tensor keepRealTokens(Tensor attentionMask, Backend backend) {
    int batch = attentionMask.dim(0);
    int length = attentionMask.dim(1);
    long[] mask = attentionMask.toLongArray();
    float[] keep = new float[batch * length];
    for (int row = 0; row < batch; row++) {
      long realLength = 0;
      for (int s = 0; s < length; s++) {
        realLength += mask[row * length + s] > 0 ? 1 : 0;
      }
      for (int s = 0; s < realLength; s++) {
        keep[row * length + s] = 1f;
      }
    }
    return backend.upload(Tensor.of(keep, batch, length, 1), DType.F32);
  }
}
