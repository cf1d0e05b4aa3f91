package dev.stepweave.core.extend;

import dev.stepweave.core.request.InvalidRequestException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The parameters a plugin accepts from a request: each bounded, typed and defaulted, so untrusted
 * input reaches plugin code only as validated numbers.
 */
public record ParamSchema(List<Param> params) {
  public ParamSchema {
    params = List.copyOf(params);
  }

  public static ParamSchema of(Param... params) {
    return new ParamSchema(List.of(params));
  }

  /**
   * Checks a request's raw values against the schema and fills in defaults.
   *
   * @throws InvalidRequestException naming the plugin and parameter
   */
  public PluginParams validate(String pluginId, Map<String, String> raw) {
    Map<String, Param> byName =
        params.stream().collect(Collectors.toMap(Param::name, p -> p, (a, b) -> a));
    for (String name : raw.keySet()) {
      if (!byName.containsKey(name)) {
        throw new InvalidRequestException(
            "plugins." + pluginId + "." + name,
            "unknown parameter '"
                + pluginId
                + "."
                + name
                + "' (known: "
                + String.join(", ", byName.keySet().stream().sorted().toList())
                + ")");
      }
    }
    Map<String, Double> values = new LinkedHashMap<>();
    for (Param p : params) {
      String v = raw.get(p.name());
      values.put(p.name(), v == null ? p.defaultValue() : p.parse(pluginId, v));
    }
    return new PluginParams(values);
  }

  /**
   * The same schema with other defaults (a deployment's): each value is checked against its
   * parameter's bounds.
   *
   * @throws InvalidRequestException for an unknown parameter or a value out of bounds
   */
  public ParamSchema withDefaults(String pluginId, Map<String, String> defaults) {
    PluginParams checked = validate(pluginId, defaults);
    return new ParamSchema(
        params.stream()
            .map(
                p ->
                    new Param(
                        p.name(),
                        p.integer(),
                        p.min(),
                        p.max(),
                        checked.number(p.name()),
                        p.description()))
            .toList());
  }

  /**
   * One parameter.
   *
   * @param name its name
   * @param integer whether only whole numbers are allowed
   * @param min the least value allowed
   * @param max the greatest value allowed
   * @param defaultValue the value when the request gives none
   * @param description what it does
   */
  public record Param(
      String name,
      boolean integer,
      double min,
      double max,
      double defaultValue,
      String description) {

    public static Param integer(String name, int min, int max, int dflt, String description) {
      return new Param(name, true, min, max, dflt, description);
    }

    public static Param number(
        String name, double min, double max, double dflt, String description) {
      return new Param(name, false, min, max, dflt, description);
    }

    double parse(String pluginId, String raw) {
      double v;
      try {
        v = integer ? Long.parseLong(raw.strip()) : Double.parseDouble(raw.strip());
      } catch (NumberFormatException e) {
        throw new InvalidRequestException(
            field(pluginId),
            pluginId
                + "."
                + name
                + " must be "
                + (integer ? "an integer" : "a number")
                + ", got '"
                + raw
                + "'");
      }
      if (!(v >= min && v <= max)) {
        throw new InvalidRequestException(
            field(pluginId),
            pluginId + "." + name + " must be in " + show(min) + ".." + show(max) + ", got " + raw);
      }
      return v;
    }

    private String field(String pluginId) {
      return "plugins." + pluginId + "." + name;
    }

    private String show(double x) {
      return integer ? Long.toString((long) x) : Double.toString(x);
    }
  }
}
