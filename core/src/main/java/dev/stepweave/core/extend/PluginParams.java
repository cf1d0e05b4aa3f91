package dev.stepweave.core.extend;

import java.util.Map;

/** A plugin's validated parameters, every one present (defaults filled in). */
public record PluginParams(Map<String, Double> values) {
  public PluginParams {
    values = Map.copyOf(values);
  }

  public double number(String name) {
    Double v = values.get(name);
    if (v == null) {
      throw new IllegalArgumentException(
          "no parameter '" + name + "' (has " + values.keySet() + ")");
    }
    return v;
  }

  public int integer(String name) {
    return (int) number(name);
  }
}
