package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * A run's JSON-lines log keyed by {@code "step"} ({@code loss.jsonl}, {@code rewards.jsonl}): read
 * whole, appended a line at a time, and cut back to a checkpoint's step when a run resumes (those
 * steps are taken again).
 */
final class StepLines {
  static final ObjectMapper JSON = new ObjectMapper();

  private StepLines() {}

  /** Every line of {@code file} as a JSON object, in order; none when it does not exist. */
  static List<JsonNode> read(Path file) throws IOException {
    List<JsonNode> rows = new ArrayList<>();
    if (!Files.exists(file)) {
      return rows;
    }
    for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      if (!line.isBlank()) {
        rows.add(JSON.readTree(line));
      }
    }
    return rows;
  }

  /** Keeps the lines of steps up to {@code step} (of a file that exists). */
  static void truncate(Path file, int step) throws IOException {
    if (!Files.exists(file)) {
      return;
    }
    StringBuilder out = new StringBuilder();
    for (JsonNode n : read(file)) {
      if (n.get("step").intValue() <= step) {
        out.append(n).append('\n');
      }
    }
    Files.writeString(file, out.toString(), StandardCharsets.UTF_8);
  }

  static void append(Path file, ObjectNode row) throws IOException {
    Files.writeString(
        file,
        row + "\n",
        StandardCharsets.UTF_8,
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }
}
