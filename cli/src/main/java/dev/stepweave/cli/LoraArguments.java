package dev.stepweave.cli;

import dev.stepweave.core.request.InvalidRequestException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The adapter arguments of the CLI: {@code serve --lora NAME=FILE} registers a file under a name
 * requests use; {@code generate --lora FILE[:SCALE]} applies a file directly (the CLI has no
 * deployment, so it names the adapter after the file).
 */
final class LoraArguments {
  private static final String EXTENSION = ".safetensors";

  /**
   * A decimal scale ("0.8", "-1", "1e-1"); anything else after the last ':' belongs to the path.
   */
  private static final Pattern SCALE =
      Pattern.compile("[-+]?(\\d+(\\.\\d*)?|\\.\\d+)([eE][-+]?\\d+)?");

  private LoraArguments() {}

  /**
   * One {@code generate --lora} argument.
   *
   * @param name the file name without {@code .safetensors}, what the request names it by
   */
  record FileUse(String name, Path file, double scale) {}

  /**
   * {@code FILE[:SCALE]} arguments, in stacking order. A path may hold ':' itself, so only the text
   * after the last ':' is a scale, and only when it is a number.
   *
   * @throws InvalidRequestException for a missing file, one that is not safetensors, a scale that
   *     is not a number, or two files with one name
   */
  static List<FileUse> fileUses(List<String> args) {
    List<FileUse> out = new ArrayList<>();
    Map<String, Path> byName = new LinkedHashMap<>();
    for (String arg : args) {
      FileUse use = fileUse(arg);
      Path other = byName.putIfAbsent(use.name(), use.file());
      if (other != null) {
        throw new InvalidRequestException(
            "--lora: two adapters named '" + use.name() + "': " + other + " and " + use.file());
      }
      out.add(use);
    }
    return List.copyOf(out);
  }

  private static FileUse fileUse(String arg) {
    Path file = Path.of(arg);
    double scale = 1.0;
    int colon = arg.lastIndexOf(':');
    if (colon > 0) {
      String tail = arg.substring(colon + 1);
      Path head = Path.of(arg.substring(0, colon));
      if (SCALE.matcher(tail).matches()) {
        file = head;
        scale = Double.parseDouble(tail);
      } else if (!Files.exists(file) && Files.isRegularFile(head)) {
        throw new InvalidRequestException(
            "--lora " + arg + ": the scale after ':' must be a number, got '" + tail + "'");
      }
    }
    if (!Files.isRegularFile(file)) {
      throw new InvalidRequestException("--lora: adapter file not found: " + file);
    }
    String fileName = file.getFileName().toString();
    if (!fileName.endsWith(EXTENSION) || fileName.length() == EXTENSION.length()) {
      throw new InvalidRequestException(
          "--lora " + file + ": adapters must be .safetensors files (no pickle)");
    }
    return new FileUse(fileName.substring(0, fileName.length() - EXTENSION.length()), file, scale);
  }

  /** The files of {@code uses} by name, for a registry of just these. */
  static Map<String, Path> files(List<FileUse> uses) {
    Map<String, Path> out = new LinkedHashMap<>();
    uses.forEach(u -> out.put(u.name(), u.file()));
    return out;
  }

  /**
   * {@code NAME=FILE} arguments as name → file; whether the files exist and fit the model is the
   * registry's check, once the model is loaded.
   *
   * @throws IllegalArgumentException for an argument without a name or a file, or a name given
   *     twice
   */
  static Map<String, Path> named(List<String> args) {
    Map<String, Path> out = new LinkedHashMap<>();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      if (eq <= 0 || eq == arg.length() - 1) {
        throw new IllegalArgumentException("--lora wants NAME=FILE, got '" + arg + "'");
      }
      String name = arg.substring(0, eq);
      if (out.putIfAbsent(name, Path.of(arg.substring(eq + 1))) != null) {
        throw new IllegalArgumentException("--lora names '" + name + "' twice");
      }
    }
    return out;
  }
}
