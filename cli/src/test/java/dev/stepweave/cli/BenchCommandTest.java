package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code stepweave bench serve}: the report's plumbing on a tiny workload (nothing is timed). */
class BenchCommandTest {
  static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");

  private static CliHarness serve(String... options) {
    List<String> args =
        new ArrayList<>(List.of("bench", "serve", "--model", TINY.toString(), "--backend", "cpu"));
    args.addAll(List.of(options));
    return CliHarness.run(args.toArray(String[]::new));
  }

  private static List<List<String>> rows(CliHarness r, String workload) {
    return r.out()
        .lines()
        .filter(l -> l.startsWith("| " + workload + " |"))
        .map(BenchCommandTest::cells)
        .toList();
  }

  @Test
  void servesTheWorkloadInAllThreeModesAndReportsEveryRequest() {
    var r =
        serve(
            "--workload",
            "image-heavy",
            "--requests",
            "3",
            "--rounds",
            "1",
            "--warmup",
            "1",
            "--seed",
            "5");
    assertEquals(0, r.exit(), r.err());
    List<List<String>> rows = rows(r, "image-heavy");
    assertEquals(3, rows.size(), r.out());
    assertEquals(
        List.of("one at a time", "request-level batching", "step-level batching"),
        rows.stream().map(c -> c.get(2)).toList());
    for (List<String> row : rows) {
      assertEquals("all at t=0", row.get(1));
      // Two images and a video, once each way.
      assertEquals("3 (2/1) × 1", row.get(3));
      assertEquals("3/3 bit-identical", row.get(11), row.toString());
    }
    // One at a time, every denoising step is its own transformer call: one request, two rows.
    assertEquals("1.00 / 2.00", rows.get(0).get(9));
    String[] stepLevel = rows.get(2).get(9).split(" / ");
    assertTrue(Double.parseDouble(stepLevel[0]) >= 1.0, rows.get(2).toString());
    assertEquals(2 * Double.parseDouble(stepLevel[0]), Double.parseDouble(stepLevel[1]), 0.011);
    assertTrue(r.out().contains("image-heavy at all at t=0: step-level batching gives"), r.out());
    assertTrue(r.out().contains("load average (1 min)"), r.out());
    assertTrue(r.out().lines().noneMatch(l -> l.startsWith("| video-heavy |")), r.out());
  }

  @Test
  void eachPoissonRateIsARowPerModeWithItsOwnOfferedLoad() {
    var r =
        serve(
            "--workload",
            "image-heavy",
            "--requests",
            "2",
            "--rounds",
            "1",
            "--warmup",
            "0",
            "--rates",
            "40,80");
    assertEquals(0, r.exit(), r.err());
    List<List<String>> rows = rows(r, "image-heavy");
    assertEquals(
        List.of(
            "Poisson 40/s",
            "Poisson 40/s",
            "Poisson 40/s",
            "Poisson 80/s",
            "Poisson 80/s",
            "Poisson 80/s"),
        rows.stream().map(c -> c.get(1)).toList(),
        r.out());
    for (List<String> row : rows) {
      assertEquals("2/2 bit-identical", row.get(11), row.toString());
    }
    assertTrue(r.out().contains("arrivals Poisson 40/s, Poisson 80/s;"), r.out());
    assertEquals(2, r.out().lines().filter(l -> l.contains("step-level batching gives")).count());
  }

  @Test
  void aBadOptionIsOneLineNamingItAndNothingRuns() {
    List<List<String>> cases =
        List.of(
            List.of("--rates", "0"),
            List.of("--rates", "abc"),
            List.of("--rates", "2,"),
            List.of("--workload", "audio"),
            List.of("--workload", "images-480p,"),
            List.of("--rates", "2", "--concurrency", "4"),
            List.of("--max-batch", "0"));
    List<String> messages =
        List.of(
            "--rates takes request rates > 0 per second, comma-separated (e.g. 2,4,8), got '0'",
            "--rates takes request rates > 0 per second, comma-separated (e.g. 2,4,8), got 'abc'",
            "--rates takes request rates > 0 per second, comma-separated (e.g. 2,4,8), got ''",
            "unknown workload 'audio' (available: image-heavy, video-heavy, images-480p,"
                + " images-1024, video-256x33, video-480p, mixed)",
            "unknown workload '' (available: image-heavy, video-heavy, images-480p,"
                + " images-1024, video-256x33, video-480p, mixed)",
            "--rates (an open loop) and --concurrency (a closed loop) exclude each other",
            "--requests, --rounds and --max-batch must be >= 1 and --warmup >= 0");
    for (int i = 0; i < cases.size(); i++) {
      var r = serve(cases.get(i).toArray(String[]::new));
      assertEquals(StepweaveCli.ExitCodes.USAGE, r.exit(), cases.get(i).toString());
      assertEquals(1, r.errorLines(), r.err());
      assertTrue(r.err().startsWith("stepweave: " + messages.get(i) + "\n"), r.err());
      // The model line comes right after the load: none means the weights were never read.
      assertEquals("", r.out(), cases.get(i).toString());
    }
  }

  /** The cells of a markdown table row, trimmed. */
  private static List<String> cells(String row) {
    return List.of(row.substring(1, row.length() - 1).split("\\|")).stream()
        .map(String::strip)
        .toList();
  }
}
