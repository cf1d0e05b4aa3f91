package dev.stepweave.cli;

import dev.stepweave.core.card.RecipeRefusedException;
import dev.stepweave.core.request.InvalidRequestException;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** The {@code stepweave} command. */
@Command(
    name = "stepweave",
    mixinStandardHelpOptions = true,
    versionProvider = StepweaveVersion.class,
    description = "A model-native runtime for video and image diffusion models (Wan).",
    // One line per command here; each is its own class.
    subcommands = {
      GenerateCommand.class,
      InfoCommand.class,
      ServeCommand.class,
      VerifyCommand.class,
      BenchCommand.class,
      CompletionCommand.class,
      PrepareCommand.class,
      TrainCommand.class,
      CommandLine.HelpCommand.class
    })
public final class StepweaveCli implements Runnable {

  @Spec CommandSpec spec;

  @Option(
      names = "--debug",
      scope = CommandLine.ScopeType.INHERIT,
      description = "Print stack traces for errors.")
  boolean debug;

  /** {@code stepweave} alone: the usage, listing the commands. */
  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  public static void main(String[] args) {
    System.exit(run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
  }

  /** Runs the CLI with the given streams and returns its exit code (tests call this). */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    CommandLine cl = commandLine();
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
          return isBadInput(ex) ? ExitCodes.USAGE : ExitCodes.FAILURE;
        });
    cl.setParameterExceptionHandler(
        (ex, a) -> {
          err.println("stepweave: " + oneLine(ex));
          err.println("Try '" + ex.getCommandLine().getCommandSpec().qualifiedName() + " --help'.");
          err.flush();
          return ExitCodes.USAGE;
        });
    return cl.execute(args);
  }

  /** The command tree, for running and for the completion script. */
  static CommandLine commandLine() {
    return new CommandLine(new StepweaveCli());
  }

  /**
   * A request or option the model cannot run — told before any work — as opposed to a failure while
   * reading, loading or running.
   */
  private static boolean isBadInput(Exception ex) {
    return ex instanceof InvalidRequestException || ex instanceof RecipeRefusedException;
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

  /** Process exit codes: 2 for a bad option or request (nothing was done), 1 for a failure. */
  static final class ExitCodes {
    static final int OK = 0;
    static final int FAILURE = 1;
    static final int USAGE = 2;

    private ExitCodes() {}
  }
}
