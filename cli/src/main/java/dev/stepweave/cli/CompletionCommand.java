package dev.stepweave.cli;

import picocli.AutoComplete;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code stepweave completion}: the bash/zsh completion script, from the command tree itself. */
@Command(
    name = "completion",
    mixinStandardHelpOptions = true,
    description = {
      "Prints a bash (and zsh, through bashcompinit) completion script for stepweave. Load it"
          + " with: source <(./stepweave completion)",
      ""
    })
final class CompletionCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().getOut().print(AutoComplete.bash("stepweave", StepweaveCli.commandLine()));
    spec.commandLine().getOut().flush();
  }
}
