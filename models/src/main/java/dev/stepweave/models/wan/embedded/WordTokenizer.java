package dev.stepweave.models.wan.embedded;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.SequencedSet;

/**
 * The embedded model's {@code tokenizer.json}: a HuggingFace word-level tokenizer over the word
 * list shipped beside this class. Text is lowercased, split on whitespace and punctuation, each
 * piece looked up whole (unknown pieces become {@code <unk>}), and {@code </s>} is appended, as
 * UMT5 tokenizers do. Special-token ids are UMT5's: pad 0, eos 1, unk 2.
 */
final class WordTokenizer {
  static final String PAD = "<pad>";
  static final String EOS = "</s>";
  static final String UNK = "<unk>";
  static final int PAD_ID = 0;
  static final int EOS_ID = 1;

  private static final String WORD_LIST = "words.txt";
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

  private WordTokenizer() {}

  /** Every token in id order: the special tokens, then the words in order of first appearance. */
  static List<String> vocabulary() {
    SequencedSet<String> tokens = new LinkedHashSet<>(List.of(PAD, EOS, UNK));
    for (String line : wordListLines()) {
      if (line.startsWith("#")) {
        continue;
      }
      for (String word : line.trim().split("\\s+")) {
        if (!word.isEmpty()) {
          tokens.add(requireSingleToken(word));
        }
      }
    }
    return List.copyOf(tokens);
  }

  static ObjectNode tokenizerJson(List<String> vocabulary) {
    ObjectNode root = JSON.objectNode();
    root.put("version", "1.0");
    root.putNull("truncation");
    root.putNull("padding");
    ArrayNode added = root.putArray("added_tokens");
    for (String special : List.of(PAD, EOS, UNK)) {
      ObjectNode t = added.addObject();
      t.put("id", vocabulary.indexOf(special));
      t.put("content", special);
      t.put("single_word", false);
      t.put("lstrip", false);
      t.put("rstrip", false);
      t.put("normalized", false);
      t.put("special", true);
    }
    root.putObject("normalizer").put("type", "Lowercase");
    root.putObject("pre_tokenizer").put("type", "Whitespace");
    root.set("post_processor", appendEos());
    root.putNull("decoder");
    ObjectNode model = root.putObject("model");
    model.put("type", "WordLevel");
    ObjectNode vocab = model.putObject("vocab");
    for (int id = 0; id < vocabulary.size(); id++) {
      vocab.put(vocabulary.get(id), id);
    }
    model.put("unk_token", UNK);
    return root;
  }

  private static ObjectNode appendEos() {
    ObjectNode p = JSON.objectNode();
    p.put("type", "TemplateProcessing");
    p.putArray("single").add(sequence("A", 0)).add(eosToken());
    p.putArray("pair").add(sequence("A", 0)).add(sequence("B", 1));
    ObjectNode eos = p.putObject("special_tokens").putObject(EOS);
    eos.put("id", EOS);
    eos.putArray("ids").add(EOS_ID);
    eos.putArray("tokens").add(EOS);
    return p;
  }

  private static ObjectNode sequence(String id, int typeId) {
    ObjectNode s = JSON.objectNode();
    ObjectNode body = s.putObject("Sequence");
    body.put("id", id);
    body.put("type_id", typeId);
    return s;
  }

  private static ObjectNode eosToken() {
    ObjectNode s = JSON.objectNode();
    ObjectNode body = s.putObject("SpecialToken");
    body.put("id", EOS);
    body.put("type_id", 0);
    return s;
  }

  /**
   * A word the pre-tokenizer keeps whole: lowercase letters and digits, or one punctuation mark.
   * Anything else could never be looked up and would only waste an embedding row.
   */
  private static String requireSingleToken(String word) {
    boolean alphanumeric =
        word.chars().allMatch(c -> (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
    boolean punctuation = word.length() == 1 && !Character.isLetterOrDigit(word.charAt(0));
    if (!alphanumeric && !punctuation) {
      throw new IllegalStateException(WORD_LIST + ": '" + word + "' is not a single token");
    }
    return word;
  }

  private static List<String> wordListLines() {
    try (InputStream in = WordTokenizer.class.getResourceAsStream(WORD_LIST)) {
      if (in == null) {
        throw new IllegalStateException(
            "resource " + WORD_LIST + " is missing beside " + WordTokenizer.class);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read resource " + WORD_LIST, e);
    }
  }
}
