package dev.stepweave.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.request.InvalidRequestException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A {@code --prompts} file: one prompt per line, as plain text or as a JSON object with {@code
 * prompt} and optionally {@code negative_prompt} and {@code seed}. Blank lines are skipped.
 */
final class PromptFile {
  private static final Set<String> FIELDS = Set.of("prompt", "negative_prompt", "seed");
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * One line's prompt; what it leaves out comes from the command line.
   *
   * @param where {@code FILE:LINE}, for messages; empty for a prompt given on the command line
   */
  record Entry(String prompt, Optional<String> negativePrompt, Optional<Long> seed, String where) {
    /** A prompt given on the command line. */
    static Entry of(String prompt) {
      return new Entry(prompt, Optional.empty(), Optional.empty(), "");
    }
  }

  private PromptFile() {}

  /**
   * The entries of {@code file}, in order.
   *
   * @throws InvalidRequestException naming the file and line of a malformed entry, or the file when
   *     it is missing or holds none
   */
  static List<Entry> read(Path file) throws IOException {
    if (!Files.isRegularFile(file)) {
      throw new InvalidRequestException("--prompts " + file + ": no such file");
    }
    List<Entry> entries = new ArrayList<>();
    List<String> lines = Files.readAllLines(file);
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (!line.isEmpty()) {
        entries.add(parse(line, file + ":" + (i + 1)));
      }
    }
    if (entries.isEmpty()) {
      throw new InvalidRequestException("--prompts " + file + ": no prompts in the file");
    }
    return entries;
  }

  private static Entry parse(String line, String where) {
    if (!line.startsWith("{")) {
      return new Entry(line, Optional.empty(), Optional.empty(), where);
    }
    JsonNode node;
    try {
      node = JSON.readTree(line);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new InvalidRequestException(where + ": not a JSON object: " + e.getOriginalMessage());
    }
    for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!FIELDS.contains(name)) {
        throw new InvalidRequestException(
            where + ": unknown field '" + name + "' (fields: prompt, negative_prompt, seed)");
      }
    }
    JsonNode prompt = node.get("prompt");
    if (prompt == null || !prompt.isTextual()) {
      throw new InvalidRequestException(where + ": 'prompt' must be a string");
    }
    JsonNode negative = node.get("negative_prompt");
    if (negative != null && !negative.isTextual()) {
      throw new InvalidRequestException(where + ": 'negative_prompt' must be a string");
    }
    JsonNode seed = node.get("seed");
    if (seed != null
        && !(seed.canConvertToLong() && seed.isIntegralNumber() && seed.asLong() >= 0)) {
      throw new InvalidRequestException(
          where + ": 'seed' must be a non-negative integer, got " + seed);
    }
    return new Entry(
        prompt.asText(),
        Optional.ofNullable(negative).map(JsonNode::asText),
        Optional.ofNullable(seed).map(JsonNode::asLong),
        where);
  }
}
