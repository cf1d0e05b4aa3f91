package dev.stepweave.models.wan.embedded;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/** Reads the dimensions a tensor layout needs from a component's config tree. */
final class ConfigValues {
  private ConfigValues() {}

  static int intOf(JsonNode config, String key) {
    JsonNode v = config.get(key);
    if (v == null || !v.isIntegralNumber()) {
      throw new IllegalArgumentException("config needs an integer '" + key + "', has " + v);
    }
    return v.intValue();
  }

  static List<Integer> intsOf(JsonNode config, String key) {
    List<Integer> out = new ArrayList<>();
    for (JsonNode v : array(config, key)) {
      out.add(v.intValue());
    }
    return out;
  }

  static List<Boolean> booleansOf(JsonNode config, String key) {
    List<Boolean> out = new ArrayList<>();
    for (JsonNode v : array(config, key)) {
      out.add(v.booleanValue());
    }
    return out;
  }

  private static JsonNode array(JsonNode config, String key) {
    JsonNode v = config.get(key);
    if (v == null || !v.isArray()) {
      throw new IllegalArgumentException("config needs an array '" + key + "', has " + v);
    }
    return v;
  }
}
