package dev.stepweave.models.sampling;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A diffusers {@code scheduler_config.json}: typed reads with the diffusers defaults, and one-line
 * errors that name the file and the key.
 */
public final class SchedulerConfig {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final JsonNode root;
  private final String source;

  private SchedulerConfig(JsonNode root, String source) {
    if (!root.isObject()) {
      throw new IllegalArgumentException(source + ": scheduler config is not a JSON object");
    }
    this.root = root;
    this.source = source;
  }

  public static SchedulerConfig read(Path file) {
    try {
      return new SchedulerConfig(JSON.readTree(file.toFile()), file.toString());
    } catch (IOException e) {
      throw new IllegalArgumentException(
          file + ": cannot read scheduler config: " + e.getMessage());
    }
  }

  public static SchedulerConfig parse(String json, String source) {
    try {
      return new SchedulerConfig(JSON.readTree(json), source);
    } catch (IOException e) {
      throw new IllegalArgumentException(source + ": invalid scheduler config: " + e.getMessage());
    }
  }

  /** The {@code _class_name} (which diffusers scheduler the file configures). */
  public String className() {
    return text("_class_name", "");
  }

  public int integer(String key, int fallback) {
    JsonNode v = value(key);
    if (v == null) {
      return fallback;
    }
    if (!v.canConvertToInt() || !v.isIntegralNumber()) {
      throw invalid(key, "an integer");
    }
    return v.intValue();
  }

  public double number(String key, double fallback) {
    JsonNode v = value(key);
    if (v == null) {
      return fallback;
    }
    if (!v.isNumber()) {
      throw invalid(key, "a number");
    }
    return v.doubleValue();
  }

  public boolean flag(String key, boolean fallback) {
    JsonNode v = value(key);
    if (v == null) {
      return fallback;
    }
    if (!v.isBoolean()) {
      throw invalid(key, "true or false");
    }
    return v.booleanValue();
  }

  public String text(String key, String fallback) {
    JsonNode v = value(key);
    if (v == null) {
      return fallback;
    }
    if (!v.isTextual()) {
      throw invalid(key, "a string");
    }
    return v.textValue();
  }

  /** An integer list; absent or null reads as empty. */
  public List<Integer> integers(String key) {
    JsonNode v = value(key);
    List<Integer> out = new ArrayList<>();
    if (v == null) {
      return out;
    }
    if (!v.isArray()) {
      throw invalid(key, "a list of integers");
    }
    for (JsonNode e : v) {
      if (!e.isIntegralNumber() || !e.canConvertToInt()) {
        throw invalid(key, "a list of integers");
      }
      out.add(e.intValue());
    }
    return out;
  }

  /** Rejects a feature this implementation lacks when the file switches it on. */
  public void rejectEnabled(String key, String sampler) {
    if (flag(key, false)) {
      throw unsupported(key + " = true", sampler);
    }
  }

  /** Rejects a feature this implementation lacks when the file sets it to anything but null. */
  public void rejectSet(String key, String sampler) {
    JsonNode v = value(key);
    if (v != null) {
      throw unsupported(key + " = " + v, sampler);
    }
  }

  /** Requires {@code key} (default {@code fallback}) to be one of {@code allowed}; returns it. */
  public String oneOf(String key, String fallback, String sampler, String... allowed) {
    String v = text(key, fallback);
    for (String a : allowed) {
      if (a.equals(v)) {
        return v;
      }
    }
    throw unsupported(key + " = \"" + v + "\"", sampler);
  }

  public IllegalArgumentException unsupported(String setting, String sampler) {
    return new IllegalArgumentException(
        source + ": " + setting + " is not supported by " + sampler);
  }

  private IllegalArgumentException invalid(String key, String expected) {
    return new IllegalArgumentException(
        source + ": '" + key + "' should be " + expected + ", got " + root.get(key));
  }

  /** The value of {@code key}, or null when absent or JSON null. */
  private JsonNode value(String key) {
    JsonNode v = root.get(key);
    return v == null || v.isNull() ? null : v;
  }

  @Override
  public String toString() {
    return source;
  }
}
