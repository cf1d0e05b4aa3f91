package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code loss.jsonl}: one JSON object per optimiser step, {@code {"step", "loss", "lr",
 * "grad_norm", "seconds"}} and, for an RL run, {@code "reward"} (the mean reward of the step's
 * rollout group) ({@code step} counts from 1; {@code grad_norm} before clipping; {@code seconds}
 * the step's wall time, rollouts included). A resumed run first drops the rows past its checkpoint:
 * those steps are taken again.
 */
public final class LossLog {
  public static final String FILE = "loss.jsonl";

  /** One row; {@code reward} is NaN for a run without rewards. */
  public record Row(
      int step, double loss, double lr, double gradNorm, double seconds, double reward) {}

  private LossLog() {}

  /** Every row of {@code file}, in order. */
  public static List<Row> read(Path file) throws IOException {
    List<Row> rows = new ArrayList<>();
    for (JsonNode n : StepLines.read(file)) {
      rows.add(
          new Row(
              n.get("step").intValue(),
              n.get("loss").doubleValue(),
              n.get("lr").doubleValue(),
              n.get("grad_norm").doubleValue(),
              n.get("seconds").doubleValue(),
              n.has("reward") ? n.get("reward").doubleValue() : Double.NaN));
    }
    return rows;
  }

  /** Keeps the rows of steps up to {@code step}. */
  static void truncate(Path file, int step) throws IOException {
    StepLines.truncate(file, step);
  }

  static void append(Path file, Row r) throws IOException {
    ObjectNode n =
        StepLines.JSON
            .createObjectNode()
            .put("step", r.step())
            .put("loss", r.loss())
            .put("lr", r.lr())
            .put("grad_norm", r.gradNorm())
            .put("seconds", r.seconds());
    if (!Double.isNaN(r.reward())) {
      n.put("reward", r.reward());
    }
    StepLines.append(file, n);
  }
}
