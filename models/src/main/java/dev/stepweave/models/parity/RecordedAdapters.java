package dev.stepweave.models.parity;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The adapters a reference directory's LoRA recordings use: a recording's {@code adapters} metadata
 * either maps names to files (relative to the checkpoint) or names adapters with strengths ({@code
 * {"a": 0.8, "b": 0.5}}); an output's own metadata says which adapters made it ({@code "a at 1.0"},
 * {@code "no adapter"}, or such a JSON object).
 */
final class RecordedAdapters {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern ONE = Pattern.compile("(\\S+) at (-?[0-9.eE+-]+)");
  static final String ADAPTERS = "adapters";

  private final Map<String, Path> files;

  private RecordedAdapters(Map<String, Path> files) {
    this.files = Map.copyOf(files);
  }

  /** Collects the name → file maps of every recording in {@code recordings}. */
  static RecordedAdapters of(Path checkpoint, List<Path> recordings) {
    Map<String, Path> files = new LinkedHashMap<>();
    for (Path r : recordings) {
      try (SafetensorsFile rec = SafetensorsFile.open(r)) {
        String v = rec.metadata().get(ADAPTERS);
        if (v == null) {
          continue;
        }
        JsonNode n = json(v, r, ADAPTERS);
        n.properties()
            .forEach(
                e -> {
                  if (e.getValue().isTextual()) {
                    files.put(e.getKey(), checkpoint.resolve(e.getValue().textValue()));
                  }
                });
      } catch (RuntimeException e) {
        // A recording that does not open is reported by its own check.
      }
    }
    return new RecordedAdapters(files);
  }

  /** A registry of the recorded adapters, inspected against {@code model}. */
  AdapterRegistry registry(WanModel model) {
    if (files.isEmpty()) {
      throw new IllegalArgumentException(
          "no recording here maps adapter names to files (metadata '" + ADAPTERS + "')");
    }
    return AdapterRegistry.open(model::inspectAdapter, files, List.of());
  }

  /**
   * The adapters a composition names, in order: {@code "no adapter"}, {@code "NAME at S"} or a JSON
   * object of strengths.
   */
  static List<AdapterUse> composition(String value, Path file, String key) {
    String v = value.strip();
    if (v.equals("no adapter") || v.equals("none")) {
      return List.of();
    }
    Matcher m = ONE.matcher(v);
    if (m.matches()) {
      return List.of(new AdapterUse(m.group(1), Double.parseDouble(m.group(2))));
    }
    JsonNode n = json(v, file, key);
    List<AdapterUse> out = new ArrayList<>();
    n.properties()
        .forEach(
            e -> {
              if (!e.getValue().isNumber()) {
                throw new IllegalArgumentException(
                    "recording "
                        + file
                        + ": metadata '"
                        + key
                        + "' gives '"
                        + e.getKey()
                        + "' a strength that is not a number");
              }
              out.add(new AdapterUse(e.getKey(), e.getValue().doubleValue()));
            });
    return out;
  }

  private static JsonNode json(String value, Path file, String key) {
    try {
      JsonNode n = JSON.readTree(value);
      if (n != null && n.isObject()) {
        return n;
      }
    } catch (IOException e) {
      // reported below
    }
    throw new IllegalArgumentException(
        "recording " + file + ": metadata '" + key + "' is not an adapter composition: " + value);
  }
}
