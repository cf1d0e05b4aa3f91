package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.wan.embedded.EmbeddedWan;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code stepweave bench train}: the timed steps of a config's run, and its refusals. */
class TrainBenchTest {
  @TempDir static Path home;
  @TempDir Path tmp;
  private static Path base;

  @BeforeAll
  static void embedded() {
    base = EmbeddedWan.ensure(home);
  }

  private Path config() throws Exception {
    return Files.writeString(
        tmp.resolve("run.yaml"),
        "base: "
            + base
            + "\ncomponent: transformer\ndata: {type: shapes, clips: 2, seed: 1, frames: 5}\n"
            + "method: {type: lora, rank: 2, targets: [to_q, to_v]}\n"
            + "steps: 3\nbatch: 2\nlearning_rate: 1e-3\noutput: out\n");
  }

  @Test
  void timesTheStepsAfterTheWarmUpAndLeavesNothingBehind() throws Exception {
    Path cfg = config();
    CliHarness r =
        CliHarness.run(
            "bench", "train", "--config", cfg.toString(), "--steps", "2", "--warmup", "1");

    assertEquals(0, r.exit(), r.err());
    List<String> lines = r.out().lines().toList();
    assertEquals("bench train on the CPU", lines.get(0).substring(0, 22), r.out());
    assertTrue(
        lines.get(3).matches("\\| transformer, lora \\| 2 \\(1\\) \\| \\d+\\.\\d{3} s \\| .*"),
        r.out());
    assertEquals(
        "(2 steps timed after 1 untimed; a step is the batch's forwards, backwards and one AdamW"
            + " update)",
        lines.get(4));
    assertTrue(r.err().contains("training "), r.err());
    assertTrue(Files.notExists(tmp.resolve("out")), "the config's output folder is not written");
  }

  @Test
  void aBadOptionIsOneLineAndExit2() throws Exception {
    Path cfg = config();
    for (List<String> bad :
        List.of(
            List.of("--steps", "0"),
            List.of("--warmup", "-1"),
            List.of("--steps", "3", "--warmup", "1"))) {
      List<String> args = new java.util.ArrayList<>(List.of("bench", "train", "--config"));
      args.add(cfg.toString());
      args.addAll(bad);
      CliHarness r = CliHarness.run(args.toArray(String[]::new));
      assertEquals(2, r.exit(), bad + ": " + r.err());
      assertEquals(1, r.errorLines(), r.err());
      assertTrue(r.out().isEmpty(), r.out());
    }
    CliHarness r =
        CliHarness.run(
            "bench", "train", "--config", cfg.toString(), "--steps", "3", "--warmup", "1");
    assertTrue(
        r.err().startsWith("stepweave: --warmup 1 and --steps 3 need 4 steps, but the config "),
        r.err());
    // The config names the precision: a --precision of another is refused, and nothing runs.
    CliHarness bf16 =
        CliHarness.run(
            "bench", "train", "--config", cfg.toString(), "--steps", "1", "--precision", "bf16");
    assertEquals(1, bf16.exit(), bf16.err());
    assertEquals(
        "stepweave: the config trains in f32: --precision bf16 disagrees (set precision: in the"
            + " config)",
        bf16.err().strip());
    assertTrue(bf16.out().isEmpty(), bf16.out());
    CliHarness missing =
        CliHarness.run("bench", "train", "--config", tmp.resolve("none.yaml").toString());
    assertEquals(2, missing.exit(), missing.err());
    assertTrue(missing.err().contains("cannot read"), missing.err());
  }
}
