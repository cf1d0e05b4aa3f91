package dev.stepweave.server;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Map;

/**
 * The server's one JSON mapper, and the strict reading of request bodies: one value and nothing
 * after it, no key twice in an object, and no string that is not valid Unicode (a lone UTF-16
 * surrogate, which a {@code \ud800} escape can smuggle past a UTF-8 check).
 */
final class Json {
  // Every body is bounded by the call's limit before it is parsed, so Jackson's own string limit
  // (20 M chars) must not refuse an input image's data URL first.
  static final ObjectMapper MAPPER =
      new ObjectMapper(
              JsonFactory.builder()
                  .streamReadConstraints(
                      StreamReadConstraints.builder().maxStringLength(Integer.MAX_VALUE).build())
                  .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                  .build())
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private Json() {}

  /**
   * The body as one JSON value.
   *
   * @throws ApiException 400 naming what is wrong: malformed JSON, a trailing token, a duplicate
   *     key, a lone surrogate
   */
  static JsonNode read(byte[] body) {
    JsonNode root;
    try {
      root = MAPPER.readTree(body);
    } catch (JsonProcessingException e) {
      throw ApiException.badRequest(null, "body is not valid JSON: " + reason(e));
    } catch (IOException e) {
      throw ApiException.badRequest(null, "body is not valid JSON");
    }
    if (root != null) {
      refuseLoneSurrogates(root, "");
    }
    return root;
  }

  /** Jackson's message without its source excerpt, with the mapper's own wording made plain. */
  private static String reason(JsonProcessingException e) {
    String m = e.getOriginalMessage().lines().findFirst().orElse("");
    if (m.startsWith("Trailing token")) {
      return "unexpected data after the JSON value";
    }
    if (m.startsWith("Duplicate field")) {
      return "duplicate key " + m.substring("Duplicate field ".length());
    }
    return m;
  }

  private static void refuseLoneSurrogates(JsonNode node, String path) {
    if (node.isTextual()) {
      int at = loneSurrogate(node.textValue());
      if (at >= 0) {
        throw ApiException.badRequest(
            path.isEmpty() ? null : path,
            (path.isEmpty() ? "a string" : path)
                + " has a lone UTF-16 surrogate at character "
                + at
                + " (\\u"
                + Integer.toHexString(node.textValue().charAt(at))
                + "); strings must be valid Unicode");
      }
    } else if (node.isObject()) {
      for (Map.Entry<String, JsonNode> e : node.properties()) {
        String key = path.isEmpty() ? e.getKey() : path + "." + e.getKey();
        if (loneSurrogate(e.getKey()) >= 0) {
          throw ApiException.badRequest(
              null, "a key has a lone UTF-16 surrogate; keys must be valid Unicode");
        }
        refuseLoneSurrogates(e.getValue(), key);
      }
    } else if (node.isArray()) {
      for (int i = 0; i < node.size(); i++) {
        refuseLoneSurrogates(node.get(i), path + "[" + i + "]");
      }
    }
  }

  /** The index of the first surrogate without its pair, or -1. */
  static int loneSurrogate(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
        } else {
          return i;
        }
      } else if (Character.isLowSurrogate(c)) {
        return i;
      }
    }
    return -1;
  }
}
