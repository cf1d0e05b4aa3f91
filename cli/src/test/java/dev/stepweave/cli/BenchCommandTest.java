package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code stepweave bench serve}: the report's plumbing on a tiny workload (nothing is timed). */
class BenchCommandTest {
  static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");

  @Test
  void servesTheWorkloadBothWaysAndReportsEveryRequest() {
    var r =
        CliHarness.run(
            "bench",
            "serve",
            "--model",
            TINY.toString(),
            "--mix",
            "image",
            "--requests",
            "3",
            "--rounds",
            "1",
            "--warmup",
            "1",
            "--seed",
            "5",
            "--backend",
            "cpu");
    assertEquals(0, r.exit(), r.err());
    List<String> rows = r.out().lines().filter(l -> l.startsWith("| image-heavy |")).toList();
    assertEquals(2, rows.size(), r.out());
    List<String> serial = cells(rows.get(0));
    List<String> batched = cells(rows.get(1));
    assertEquals("one at a time", serial.get(1));
    assertEquals("step-level batching", batched.get(1));
    // Two images and a video, once each way.
    assertEquals("3 (2/1) × 1", serial.get(2));
    assertEquals("3 (2/1) × 1", batched.get(2));
    // One at a time, every denoising step is its own transformer call.
    assertEquals("1.00", serial.get(8));
    assertTrue(Double.parseDouble(batched.get(8)) >= 1.0, batched.toString());
    assertTrue(r.out().contains("outputs bit-identical 3/3"), r.out());
    assertTrue(r.out().contains("load average (1 min)"), r.out());
    assertTrue(r.out().lines().noneMatch(l -> l.startsWith("| video-heavy |")), r.out());
  }

  @Test
  void anUnknownMixIsOneLineNamingTheChoices() {
    var r = CliHarness.run("bench", "serve", "--model", TINY.toString(), "--mix", "audio");
    assertEquals(StepweaveCli.ExitCodes.FAILURE, r.exit());
    assertEquals(1, r.errorLines(), r.err());
    assertTrue(r.err().contains("unknown mix 'audio' (available: image, video, both)"), r.err());
  }

  /** The cells of a markdown table row, trimmed. */
  private static List<String> cells(String row) {
    return List.of(row.substring(1, row.length() - 1).split("\\|")).stream()
        .map(String::strip)
        .toList();
  }
}
