package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stepweave bench generate} on the tiny golden checkpoint: a cold and a warm run, their warm
 * median, and the product's step beside the same step's forwards issued by hand (nothing here is a
 * performance figure; the plumbing is what is checked).
 */
class GenerateBenchTest {
  @TempDir Path dir;

  @Test
  void printsEveryRunAndTheBareStepBesideTheProductStep() {
    var r =
        CliHarness.run(
            "bench",
            "generate",
            "a red ball",
            "--model",
            BenchCommandTest.TINY.toString(),
            "--backend",
            "cpu",
            "--size",
            "32x32",
            "--frames",
            "5",
            "--steps",
            "3",
            "--seed",
            "1",
            "--repeat",
            "2",
            "-o",
            dir.resolve("out.mp4").toString());
    assertEquals(0, r.exit(), r.err());
    assertTrue(r.out().contains("| 1 (cold) |"), r.out());
    assertTrue(r.out().contains("| warm median |"), r.out());
    Matcher m =
        Pattern.compile(
                "bare step \\(two batch-1 forwards by hand, no engine\\): ([0-9.]+) ms; the"
                    + " product's step \\(last run\\): ([0-9.]+) ms, ([-+][0-9.]+) ms")
            .matcher(r.out());
    assertTrue(m.find(), r.out());
    double bare = Double.parseDouble(m.group(1));
    double product = Double.parseDouble(m.group(2));
    assertTrue(bare > 0 && product > 0, m.group());
    assertEquals(product - bare, Double.parseDouble(m.group(3)), 0.11);
    // The cost model's lines: the denoising step ran 3 calls a run, so 3 of its 6 in the warm run.
    Matcher step =
        Pattern.compile(
                "diffusion_step +x1 +[0-9.]+ / +([0-9.]+) / +([0-9.]+) / +([0-9.]+) +\\(6 calls\\)")
            .matcher(r.out());
    assertTrue(step.find(), r.out());
    assertTrue(Double.parseDouble(step.group(3)) > 0, step.group());
    // The startup line names the backend's own share of "options and backend".
    assertTrue(
        r.out().matches("(?s).*options and backend [0-9.]+ s \\(backend [0-9.]+ s\\).*"), r.out());
  }
}
