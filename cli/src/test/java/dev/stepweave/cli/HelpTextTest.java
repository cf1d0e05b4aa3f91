package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The help texts, the usage of {@code stepweave} alone, and the completion script. */
class HelpTextTest {
  @TempDir Path tmp;

  /** Runs the CLI and also captures System.err, where picocli's own warnings go. */
  private static CliHarness runCapturingSystemErr(String[] args, StringBuilder systemErr) {
    PrintStream before = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      return CliHarness.run(args);
    } finally {
      System.setErr(before);
      systemErr.append(captured.toString(StandardCharsets.UTF_8));
    }
  }

  @Test
  void everyHelpTextPrintsCleanly() {
    for (List<String> command :
        List.<List<String>>of(
            List.of(),
            List.of("generate"),
            List.of("info"),
            List.of("serve"),
            List.of("verify"),
            List.of("bench"),
            List.of("bench", "serve"),
            List.of("bench", "generate"),
            List.of("completion"),
            List.of("prepare"))) {
      var args = new java.util.ArrayList<>(command);
      args.add("--help");
      StringBuilder systemErr = new StringBuilder();
      var r = runCapturingSystemErr(args.toArray(String[]::new), systemErr);
      assertEquals(0, r.exit(), "for " + args);
      assertEquals("", r.err(), "for " + args);
      assertEquals("", systemErr.toString(), "for " + args);
      assertTrue(
          r.out()
              .startsWith(
                  "Usage: stepweave" + (command.isEmpty() ? "" : " " + String.join(" ", command))),
          r.out());
    }
  }

  @Test
  void theDeviceHeadroomHelpShowsItsPercentSign() {
    var r = CliHarness.run("generate", "--help");
    assertTrue(r.out().contains("default: 10% of the"), r.out());
  }

  @Test
  void stepweaveAlonePrintsItsUsage() {
    var r = CliHarness.run();
    assertEquals(0, r.exit());
    assertEquals("", r.err());
    assertTrue(r.out().startsWith("Usage: stepweave [-hV] [--debug] [COMMAND]"), r.out());
    for (String command :
        List.of("generate", "info", "serve", "verify", "bench", "completion", "prepare")) {
      assertTrue(r.out().lines().anyMatch(l -> l.strip().startsWith(command)), command);
    }
  }

  @Test
  void aBadOptionNamesTheCommandsHelpOnce() {
    var root = CliHarness.run("--nope");
    assertEquals(StepweaveCli.ExitCodes.USAGE, root.exit());
    assertEquals("stepweave: Unknown option: '--nope'\nTry 'stepweave --help'.\n", root.err());
    var sub = CliHarness.run("generate", "x", "--nope");
    assertEquals(
        "stepweave: Unknown option: '--nope'\nTry 'stepweave generate --help'.\n", sub.err());
    var nested = CliHarness.run("bench", "serve", "--nope");
    assertEquals(
        "stepweave: Unknown option: '--nope'\nTry 'stepweave bench serve --help'.\n", nested.err());
  }

  @Test
  void theVersionIsTheBuildsVersion() {
    var r = CliHarness.run("--version");
    assertEquals("stepweave " + StepweaveVersion.get() + "\n", r.out());
    assertTrue(
        StepweaveVersion.get().matches("\\d+\\.\\d+\\.\\d+(-SNAPSHOT)?"), StepweaveVersion.get());
  }

  @Test
  void theCompletionScriptLoadsInBashAndCompletesCommandsAndOptions() throws Exception {
    var r = CliHarness.run("completion");
    assertEquals(0, r.exit(), r.err());
    Path script = Files.writeString(tmp.resolve("stepweave-completion.bash"), r.out());
    // Source it, then ask for the completions of "stepweave gen" and "stepweave generate --pro"
    // (compopt only works inside a real completion, so a no-op stands in for it).
    String probe =
        "source "
            + script
            + "; compopt() { :; }; COMP_WORDS=(stepweave gen); COMP_CWORD=1; COMP_LINE='stepweave gen';"
            + " COMP_POINT=${#COMP_LINE}; _complete_stepweave; echo \"${COMPREPLY[@]}\";"
            + " COMP_WORDS=(stepweave generate --pro); COMP_CWORD=2;"
            + " COMP_LINE='stepweave generate --pro'; COMP_POINT=${#COMP_LINE};"
            + " _complete_stepweave; echo \"${COMPREPLY[@]}\"";
    Process bash = new ProcessBuilder("bash", "-c", probe).redirectErrorStream(true).start();
    assertTrue(bash.waitFor(30, TimeUnit.SECONDS));
    String output = new String(bash.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, bash.exitValue(), output);
    assertEquals(List.of("generate", "--prompts"), output.lines().map(String::strip).toList());
  }
}
