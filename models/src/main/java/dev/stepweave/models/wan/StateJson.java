package dev.stepweave.models.wan;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;

/** The small-field half of serialised loop states. */
final class StateJson {
  private static final ObjectMapper JSON = new ObjectMapper();

  private StateJson() {}

  static ObjectNode object() {
    return JSON.createObjectNode();
  }

  static JsonNode parse(String json, String loopId) {
    try {
      return JSON.readTree(json);
    } catch (IOException e) {
      throw new IllegalArgumentException("corrupt " + loopId + " state: " + e.getMessage());
    }
  }
}
