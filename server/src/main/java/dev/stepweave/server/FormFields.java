package dev.stepweave.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The fields of a create call as strings, from a JSON object, a multipart/form-data body or a
 * urlencoded form: OpenAI's clients send either JSON or multipart for {@code POST /v1/videos}, and
 * multipart fields are text, so every value is handled as its text. The one structured field,
 * {@code cache}, is flat in every form: {@code cache} lists plugin ids ({@code
 * "dbcache,stepcache"}) and {@code cache.PLUGIN.PARAM} fields carry parameters; a JSON object
 * {@code {"cache": {"dbcache": {"threshold": 0.1}}}} is read as exactly those fields.
 */
final class FormFields {
  /** The field naming the cache plugins a request turns on. */
  static final String CACHE = "cache";

  private FormFields() {}

  /**
   * Parses {@code body} by its content type and refuses fields outside {@code allowed}.
   *
   * @throws ApiException 400 for a malformed body or an unknown field, 415 for another content type
   */
  static Map<String, String> parse(String contentType, byte[] body, Set<String> allowed) {
    String type = contentType == null ? "" : contentType.toLowerCase(Locale.ROOT);
    Map<String, String> fields;
    if (type.startsWith("application/json") || (type.isEmpty() && body.length > 0)) {
      fields = json(body);
    } else if (type.startsWith("multipart/form-data")) {
      fields = Multipart.parse(boundary(contentType), body);
    } else if (type.startsWith("application/x-www-form-urlencoded")) {
      fields = urlencoded(body);
    } else {
      throw new ApiException(
          415,
          "invalid_request_error",
          null,
          "unsupported_media_type",
          "send application/json or multipart/form-data, not '" + contentType + "'");
    }
    for (String name : fields.keySet()) {
      boolean cacheParam = name.startsWith(CACHE + ".") && allowed.contains(CACHE);
      if (!allowed.contains(name) && !cacheParam) {
        throw ApiException.badRequest(name, "unknown parameter '" + name + "'");
      }
    }
    return fields;
  }

  private static Map<String, String> json(byte[] body) {
    JsonNode root;
    try {
      root = Exchanges.JSON.readTree(body);
    } catch (JsonProcessingException e) {
      throw ApiException.badRequest(
          null, "body is not valid JSON: " + e.getOriginalMessage().lines().findFirst().orElse(""));
    } catch (java.io.IOException e) {
      throw ApiException.badRequest(null, "body is not valid JSON");
    }
    if (root == null || !root.isObject()) {
      throw ApiException.badRequest(null, "body must be a JSON object");
    }
    Map<String, String> fields = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> e : root.properties()) {
      JsonNode v = e.getValue();
      if (v.isNull()) {
        continue;
      }
      if (e.getKey().equals(CACHE) && v.isObject()) {
        flattenCache(v, fields);
        continue;
      }
      if (!v.isValueNode()) {
        throw ApiException.badRequest(e.getKey(), e.getKey() + " must be a string or a number");
      }
      fields.put(e.getKey(), v.asText());
    }
    return fields;
  }

  /** {"dbcache": {"threshold": 0.1}, "stepcache": {}} → cache=dbcache,stepcache and params. */
  private static void flattenCache(JsonNode cache, Map<String, String> fields) {
    java.util.List<String> ids = new java.util.ArrayList<>();
    for (Map.Entry<String, JsonNode> plugin : cache.properties()) {
      String id = plugin.getKey();
      ids.add(id);
      JsonNode params = plugin.getValue();
      if (params.isNull()) {
        continue;
      }
      if (!params.isObject()) {
        throw ApiException.badRequest(
            CACHE + "." + id, "cache." + id + " must be an object of parameters");
      }
      for (Map.Entry<String, JsonNode> p : params.properties()) {
        String name = CACHE + "." + id + "." + p.getKey();
        if (!p.getValue().isValueNode() || p.getValue().isNull()) {
          throw ApiException.badRequest(name, name + " must be a string or a number");
        }
        fields.put(name, p.getValue().asText());
      }
    }
    fields.put(CACHE, String.join(",", ids));
  }

  private static Map<String, String> urlencoded(byte[] body) {
    Map<String, String> fields = new LinkedHashMap<>();
    String text = new String(body, StandardCharsets.UTF_8);
    for (String pair : text.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = eq < 0 ? pair : pair.substring(0, eq);
      String value = eq < 0 ? "" : pair.substring(eq + 1);
      try {
        fields.put(
            URLDecoder.decode(name, StandardCharsets.UTF_8),
            URLDecoder.decode(value, StandardCharsets.UTF_8));
      } catch (IllegalArgumentException e) {
        throw ApiException.badRequest(null, "malformed form field '" + name + "'");
      }
    }
    return fields;
  }

  private static String boundary(String contentType) {
    return Arrays.stream(contentType.split(";"))
        .map(String::trim)
        .filter(p -> p.toLowerCase(Locale.ROOT).startsWith("boundary="))
        .map(p -> p.substring("boundary=".length()))
        .map(b -> b.length() >= 2 && b.startsWith("\"") && b.endsWith("\"") ? unquote(b) : b)
        .findFirst()
        .filter(b -> !b.isEmpty() && b.length() <= 200)
        .orElseThrow(() -> ApiException.badRequest(null, "multipart body without a boundary"));
  }

  private static String unquote(String s) {
    return s.substring(1, s.length() - 1);
  }
}
