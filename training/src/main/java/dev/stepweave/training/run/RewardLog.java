package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code rewards.jsonl}: an RL run's held-out measurements, {@code {"step", "heldout_reward"}} —
 * the policy's mean reward on the config's {@code evaluation.prompts} before the first step (step
 * 0), every {@code evaluation.every} steps and after the last. The reward curve of the run.
 */
public final class RewardLog {
  public static final String FILE = "rewards.jsonl";

  /** One measurement after {@code step} optimiser steps. */
  public record Row(int step, double heldOutReward) {}

  private RewardLog() {}

  /** Every row of {@code file}, in order. */
  public static List<Row> read(Path file) throws IOException {
    List<Row> rows = new ArrayList<>();
    for (JsonNode n : StepLines.read(file)) {
      rows.add(new Row(n.get("step").intValue(), n.get("heldout_reward").doubleValue()));
    }
    return rows;
  }

  static void append(Path file, Row r) throws IOException {
    StepLines.append(
        file,
        StepLines.JSON
            .createObjectNode()
            .put("step", r.step())
            .put("heldout_reward", r.heldOutReward()));
  }
}
