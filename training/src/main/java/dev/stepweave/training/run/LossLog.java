package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code loss.jsonl}: one JSON object per optimiser step, {@code {"step", "loss", "lr",
 * "grad_norm", "seconds"}} ({@code step} counts from 1; {@code grad_norm} before clipping; {@code
 * seconds} the step's wall time). A resumed run first drops the rows past its checkpoint: those
 * steps are taken again.
 */
public final class LossLog {
  public static final String FILE = "loss.jsonl";
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One row. */
  public record Row(int step, double loss, double lr, double gradNorm, double seconds) {}

  private LossLog() {}

  /** Every row of {@code file}, in order. */
  public static List<Row> read(Path file) throws IOException {
    List<Row> rows = new ArrayList<>();
    if (!Files.exists(file)) {
      return rows;
    }
    for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      if (line.isBlank()) {
        continue;
      }
      JsonNode n = JSON.readTree(line);
      rows.add(
          new Row(
              n.get("step").intValue(),
              n.get("loss").doubleValue(),
              n.get("lr").doubleValue(),
              n.get("grad_norm").doubleValue(),
              n.get("seconds").doubleValue()));
    }
    return rows;
  }

  /** Keeps the rows of steps up to {@code step}. */
  static void truncate(Path file, int step) throws IOException {
    List<Row> kept = read(file).stream().filter(r -> r.step() <= step).toList();
    StringBuilder out = new StringBuilder();
    kept.forEach(r -> out.append(line(r)));
    Files.writeString(file, out.toString(), StandardCharsets.UTF_8);
  }

  static void append(Path file, Row row) throws IOException {
    Files.writeString(
        file,
        line(row),
        StandardCharsets.UTF_8,
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }

  private static String line(Row r) {
    return JSON.createObjectNode()
            .put("step", r.step())
            .put("loss", r.loss())
            .put("lr", r.lr())
            .put("grad_norm", r.gradNorm())
            .put("seconds", r.seconds())
            .toString()
        + "\n";
  }
}
