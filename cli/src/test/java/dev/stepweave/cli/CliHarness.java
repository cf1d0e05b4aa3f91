package dev.stepweave.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/** Runs the CLI in-process and captures what it prints. */
record CliHarness(int exit, String out, String err) {
  static CliHarness run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = StepweaveCli.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    return new CliHarness(exit, out.toString(), err.toString());
  }

  /** The error output as lines, without the progress lines of a run that started. */
  long errorLines() {
    return err.lines().filter(l -> l.startsWith("stepweave:")).count();
  }
}
