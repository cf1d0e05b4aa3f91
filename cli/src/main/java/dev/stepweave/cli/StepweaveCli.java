package dev.stepweave.cli;

import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** The {@code stepweave} command. */
@Command(
    name = "stepweave",
    mixinStandardHelpOptions = true,
    version = "stepweave 0.1.0",
    description = "A model-native runtime for video and image diffusion models (Wan 2.1).",
    subcommands = {
      GenerateCommand.class,
      ServeCommand.class,
      VerifyCommand.class,
      BenchCommand.class,
      CommandLine.HelpCommand.class
    })
public final class StepweaveCli {

  @Option(
      names = "--debug",
      scope = CommandLine.ScopeType.INHERIT,
      description = "Print stack traces for errors.")
  boolean debug;

  public static void main(String[] args) {
    System.exit(run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
  }

  /** Runs the CLI with the given streams and returns its exit code (tests call this). */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    StepweaveCli root = new StepweaveCli();
    CommandLine cl = new CommandLine(root);
    cl.setOut(out);
    cl.setErr(err);
    cl.setExecutionExceptionHandler(
        (ex, commandLine, parseResult) -> {
          // Users get one line naming what is wrong; --debug adds the trace for developers.
          boolean debug = parseResult.hasMatchedOption("--debug");
          for (var sub = parseResult.subcommand(); sub != null && !debug; sub = sub.subcommand()) {
            debug = sub.hasMatchedOption("--debug");
          }
          err.println("stepweave: " + oneLine(ex));
          if (debug) {
            ex.printStackTrace(err);
          }
          err.flush();
          return ExitCodes.FAILURE;
        });
    cl.setParameterExceptionHandler(
        (ex, a) -> {
          err.println("stepweave: " + oneLine(ex));
          err.println("Try 'stepweave " + ex.getCommandLine().getCommandName() + " --help'.");
          err.flush();
          return ExitCodes.USAGE;
        });
    return cl.execute(args);
  }

  /** The exception's message (or its type when it has none) on one line. */
  static String oneLine(Throwable ex) {
    String msg = ex.getMessage();
    if (msg == null || msg.isBlank()) {
      msg = ex.getClass().getSimpleName();
    }
    int nl = msg.indexOf('\n');
    return nl >= 0 ? msg.substring(0, nl) : msg;
  }

  /** Process exit codes. */
  static final class ExitCodes {
    static final int OK = 0;
    static final int FAILURE = 1;
    static final int USAGE = 2;

    private ExitCodes() {}
  }
}
