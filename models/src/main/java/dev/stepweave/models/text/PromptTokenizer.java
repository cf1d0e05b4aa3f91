package dev.stepweave.models.text;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.CheckpointException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns prompts into fixed-length token ids the way the transformers tokenizer does for the text
 * encoder ({@code padding="max_length", truncation=True, add_special_tokens=True}): whatever model
 * the checkpoint's {@code tokenizer.json} describes (Unigram for real UMT5 checkpoints), with its
 * post-processor appending the end-of-sequence token, truncation that keeps room for it, and
 * padding with the pad token.
 *
 * <p>Everything comes from the local files; the tokenizer library is kept off the network (see
 * {@link OfflineTokenizerLibrary}).
 */
public final class PromptTokenizer implements AutoCloseable {
  private static final String TOKENIZER_FILE = "tokenizer.json";

  private final Path directory;
  // The library fixes truncation and padding length when a tokenizer is created, so there is one
  // native tokenizer per requested length (in practice one: max_sequence_length).
  private final Map<Integer, HuggingFaceTokenizer> byMaxLength = new HashMap<>();

  private PromptTokenizer(Path directory) {
    this.directory = directory;
  }

  /**
   * Opens the tokenizer in {@code path}: a checkpoint's tokenizer directory (holding {@code
   * tokenizer.json} and optionally {@code tokenizer_config.json}) or the {@code tokenizer.json}
   * file itself.
   */
  public static PromptTokenizer load(Path path) {
    Path directory = Files.isDirectory(path) ? path : path.toAbsolutePath().getParent();
    if (!Files.isRegularFile(directory.resolve(TOKENIZER_FILE))) {
      throw new CheckpointException(path + ": no " + TOKENIZER_FILE + " found");
    }
    OfflineTokenizerLibrary.enforce();
    return new PromptTokenizer(directory);
  }

  /**
   * Token ids {@code [B, maxLength]} I64 and attention mask {@code [B, maxLength]} I64 (1 for real
   * tokens including the end-of-sequence token, 0 for padding).
   */
  public TokenBatch encode(List<String> prompts, int maxLength) {
    if (maxLength < 1) {
      throw new IllegalArgumentException("maxLength must be positive, got " + maxLength);
    }
    HuggingFaceTokenizer tokenizer = forLength(maxLength);
    long[] ids = new long[prompts.size() * maxLength];
    long[] mask = new long[ids.length];
    for (int row = 0; row < prompts.size(); row++) {
      Encoding encoding = tokenizer.encode(prompts.get(row));
      long[] rowIds = encoding.getIds();
      if (rowIds.length != maxLength) {
        throw new CheckpointException(
            directory.resolve(TOKENIZER_FILE)
                + ": padding to "
                + maxLength
                + " tokens gave "
                + rowIds.length
                + " (does the tokenizer define a pad token?)");
      }
      System.arraycopy(rowIds, 0, ids, row * maxLength, maxLength);
      System.arraycopy(encoding.getAttentionMask(), 0, mask, row * maxLength, maxLength);
    }
    return new TokenBatch(
        Tensor.ofLongs(ids, prompts.size(), maxLength),
        Tensor.ofLongs(mask, prompts.size(), maxLength));
  }

  private synchronized HuggingFaceTokenizer forLength(int maxLength) {
    HuggingFaceTokenizer tokenizer = byMaxLength.get(maxLength);
    if (tokenizer == null) {
      tokenizer = open(maxLength);
      byMaxLength.put(maxLength, tokenizer);
    }
    return tokenizer;
  }

  private HuggingFaceTokenizer open(int maxLength) {
    String length = Integer.toString(maxLength);
    Map<String, String> options =
        Map.of(
            "addSpecialTokens", "true",
            "truncation", "longest_first",
            "padding", "max_length",
            "maxLength", length,
            // transformers honours an explicit max_length above model_max_length; so must we.
            "modelMaxLength", length);
    try {
      return HuggingFaceTokenizer.newInstance(directory, options);
    } catch (IOException | RuntimeException e) {
      throw new CheckpointException(
          directory.resolve(TOKENIZER_FILE) + ": cannot load tokenizer: " + e.getMessage(), e);
    }
  }

  @Override
  public synchronized void close() {
    byMaxLength.values().forEach(HuggingFaceTokenizer::close);
    byMaxLength.clear();
  }

  /** A tokenized batch. */
  public record TokenBatch(Tensor inputIds, Tensor attentionMask) {}
}
