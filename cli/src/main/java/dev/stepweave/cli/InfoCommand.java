package dev.stepweave.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.media.OutputMetadata;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code stepweave info FILE}: what made a file {@code generate} wrote. */
@Command(
    name = "info",
    mixinStandardHelpOptions = true,
    description = {
      "Prints the metadata generate stored in an MP4, GIF or PNG file: Stepweave's version, the"
          + " model, the prompt and negative prompt, the seed, the sampler, steps, guidance,"
          + " size, frames, adapters and the effective settings.",
      ""
    })
final class InfoCommand implements Callable<Integer> {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Spec CommandSpec spec;

  @Parameters(index = "0", paramLabel = "FILE", description = "A file stepweave generate wrote.")
  Path file;

  @Option(names = "--json", description = "Print the metadata as the JSON document stored.")
  boolean json;

  @Override
  public Integer call() throws IOException {
    PrintWriter out = spec.commandLine().getOut();
    var contents = OutputMetadata.read(file);
    String document =
        contents
            .metadataJson()
            .orElseThrow(
                () ->
                    new IOException(
                        file
                            + ": a "
                            + contents.format().extension()
                            + " file without Stepweave metadata"));
    if (json) {
      out.println(document);
      return StepweaveCli.ExitCodes.OK;
    }
    JsonNode root = JSON.readTree(document);
    out.printf(Locale.ROOT, "%-16s %s%n", "file", file);
    out.printf(Locale.ROOT, "%-16s %s%n", "format", contents.format().extension());
    root.properties()
        .forEach(
            e ->
                out.printf(
                    Locale.ROOT,
                    "%-16s %s%n",
                    e.getKey(),
                    e.getValue().isTextual() ? e.getValue().asText() : e.getValue().toString()));
    return StepweaveCli.ExitCodes.OK;
  }
}
