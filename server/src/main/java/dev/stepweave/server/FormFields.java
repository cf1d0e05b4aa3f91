package dev.stepweave.server;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
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
 * {@code {"cache": {"dbcache": {"threshold": 0.1}}}} is read as exactly those fields. Adapters are
 * flat the same way: {@code lora.NAME=SCALE} fields in the order they stack, which is how forms
 * send them and what a JSON {@code "loras": [{"name": NAME, "scale": SCALE}, …]} becomes. The input
 * image, {@code input_reference}, is a file part of a multipart body, or text: a data URL string,
 * which in JSON may also come as OpenAI's reference object {@code {"image_url": …}}.
 */
final class FormFields {
  /** The field of a video call's input image (OpenAI's name). */
  static final String INPUT_REFERENCE = "input_reference";

  /** The field naming the cache plugins a request turns on. */
  static final String CACHE = "cache";

  /** The JSON field listing the adapters a request stacks. */
  static final String LORAS = "loras";

  /** The prefix of a flat adapter field, {@code lora.NAME=SCALE}. */
  static final String LORA = "lora.";

  private FormFields() {}

  /** A call's text fields and its file parts (multipart bodies only), each by field name. */
  record Form(Map<String, String> fields, Map<String, Multipart.Upload> files) {}

  /**
   * Parses {@code body} by its content type and refuses fields outside {@code allowed}; a file part
   * is accepted only for a field in {@code allowed} that is {@link #INPUT_REFERENCE}.
   *
   * @throws ApiException 400 for a malformed body or an unknown field, 415 for a missing or another
   *     content type (and JSON in a charset other than UTF-8)
   */
  static Form parse(String contentType, byte[] body, Set<String> allowed) {
    String type = contentType == null ? "" : contentType.toLowerCase(Locale.ROOT).strip();
    Map<String, String> fields;
    Map<String, Multipart.Upload> files = Map.of();
    if (type.isEmpty()) {
      throw unsupported(
          body.length == 0
              ? "the call needs a body: application/json or multipart/form-data"
              : "the body has no Content-Type; send application/json or multipart/form-data");
    } else if (mediaType(type).equals("application/json")) {
      String charset = parameter(contentType, "charset");
      if (charset != null && !charset.equalsIgnoreCase("utf-8")) {
        throw unsupported("application/json bodies must be UTF-8, not charset=" + charset);
      }
      fields = json(body);
    } else if (mediaType(type).equals("multipart/form-data")) {
      Set<String> fileFields =
          allowed.contains(INPUT_REFERENCE) ? Set.of(INPUT_REFERENCE) : Set.of();
      Multipart.Parts parts = Multipart.parse(boundary(contentType), body, fileFields);
      fields = parts.fields();
      files = parts.files();
    } else if (mediaType(type).equals("application/x-www-form-urlencoded")) {
      fields = urlencoded(body);
    } else {
      throw unsupported("send application/json or multipart/form-data, not '" + contentType + "'");
    }
    for (String name : fields.keySet()) {
      boolean cacheParam = name.startsWith(CACHE + ".") && allowed.contains(CACHE);
      boolean adapter = name.startsWith(LORA) && allowed.contains(LORAS);
      if (!allowed.contains(name) && !cacheParam && !adapter) {
        throw ApiException.badRequest(name, "unknown parameter '" + name + "'");
      }
    }
    return new Form(fields, files);
  }

  private static ApiException unsupported(String message) {
    return new ApiException(415, "invalid_request_error", null, "unsupported_media_type", message);
  }

  /** The type and subtype of a lower-cased Content-Type, without its parameters. */
  private static String mediaType(String type) {
    int semicolon = type.indexOf(';');
    return (semicolon < 0 ? type : type.substring(0, semicolon)).strip();
  }

  /**
   * Text sent as bytes, refused (400 naming the field) unless it is well-formed UTF-8: a decoder
   * that replaced bad bytes would pass a prompt on that the client never wrote.
   */
  static String utf8(String field, byte[] bytes) {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      throw ApiException.badRequest(field, "field '" + field + "' is not valid UTF-8");
    }
  }

  private static Map<String, String> json(byte[] body) {
    JsonNode root = Json.read(body);
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
      if (e.getKey().equals(LORAS)) {
        flattenLoras(v, fields);
        continue;
      }
      if (e.getKey().equals(INPUT_REFERENCE) && !v.isTextual()) {
        if (!v.isObject()) {
          throw ApiException.badRequest(
              INPUT_REFERENCE,
              "input_reference must be a data URL string or an object {\"image_url\": …}");
        }
        fields.put(INPUT_REFERENCE, imageUrl(v));
        continue;
      }
      if (e.getKey().startsWith(LORA)) {
        // One spelling per body keeps the stacking order the order of the array.
        throw ApiException.badRequest(
            e.getKey(), "in JSON, adapters go in \"loras\": [{\"name\": …, \"scale\": …}]");
      }
      if (!v.isValueNode()) {
        throw ApiException.badRequest(e.getKey(), e.getKey() + " must be a string or a number");
      }
      fields.put(e.getKey(), v.asText());
    }
    return fields;
  }

  /**
   * OpenAI's reference object, {"image_url": URL} or {"file_id": ID}, as its URL: this server has
   * no Files API, so a file id is refused.
   */
  private static String imageUrl(JsonNode reference) {
    for (Map.Entry<String, JsonNode> field : reference.properties()) {
      if (!field.getKey().equals("image_url") && !field.getKey().equals("file_id")) {
        throw ApiException.badRequest(
            INPUT_REFERENCE,
            "unknown parameter '"
                + field.getKey()
                + "' of input_reference (image_url; or send the image as a multipart file)");
      }
    }
    if (reference.hasNonNull("file_id")) {
      throw ApiException.badRequest(
          INPUT_REFERENCE,
          "input_reference.file_id is not supported (this server has no Files API); send"
              + " input_reference.image_url as a data URL or the image as a multipart file");
    }
    JsonNode url = reference.get("image_url");
    if (url == null || !url.isTextual()) {
      throw ApiException.badRequest(
          INPUT_REFERENCE, "input_reference.image_url is required and must be a string");
    }
    return url.textValue();
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

  /**
   * [{"name": "style", "scale": 0.8}, {"name": "speed"}] → lora.style=0.8, lora.speed=1 (a scale
   * left out is 1). Refusals name the entry's field, {@code loras[i].name} or {@code
   * loras[i].scale}.
   */
  private static void flattenLoras(JsonNode loras, Map<String, String> fields) {
    if (!loras.isArray()) {
      throw ApiException.badRequest(
          LORAS, "loras must be an array of {\"name\": …, \"scale\": …} objects");
    }
    for (int i = 0; i < loras.size(); i++) {
      String at = LORAS + "[" + i + "]";
      JsonNode entry = loras.get(i);
      if (!entry.isObject()) {
        throw ApiException.badRequest(at, at + " must be an object {\"name\": …, \"scale\": …}");
      }
      for (Map.Entry<String, JsonNode> field : entry.properties()) {
        String key = field.getKey();
        if (!key.equals("name") && !key.equals("scale")) {
          throw ApiException.badRequest(
              at + "." + key, "unknown parameter '" + key + "' of " + at + " (name, scale)");
        }
      }
      JsonNode name = entry.get("name");
      if (name == null || name.isNull()) {
        throw ApiException.badRequest(at + ".name", at + ".name is required");
      }
      if (!name.isTextual()) {
        throw ApiException.badRequest(at + ".name", at + ".name must be a string");
      }
      JsonNode scale = entry.get("scale");
      String value = "1";
      if (scale != null && !scale.isNull()) {
        if (!scale.isValueNode()) {
          throw ApiException.badRequest(at + ".scale", at + ".scale must be a number");
        }
        value = scale.asText();
      }
      if (fields.putIfAbsent(LORA + name.textValue(), value) != null) {
        throw ApiException.badRequest(
            at + ".name", "adapter '" + name.textValue() + "' is named twice");
      }
    }
  }

  private static Map<String, String> urlencoded(byte[] body) {
    Map<String, String> fields = new LinkedHashMap<>();
    // Bytes one to one: a raw non-ASCII byte is refused below, escapes are decoded as UTF-8.
    String text = new String(body, StandardCharsets.ISO_8859_1);
    for (String pair : text.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = eq < 0 ? pair : pair.substring(0, eq);
      String value = eq < 0 ? "" : pair.substring(eq + 1);
      String decoded = percentDecoded(name, name);
      value = percentDecoded(decoded, value);
      // As in multipart bodies: a repeated field would silently drop a value (an adapter, say).
      if (fields.putIfAbsent(decoded, value) != null) {
        throw ApiException.badRequest(decoded, "field '" + decoded + "' given twice");
      }
    }
    return fields;
  }

  /** A form's {@code %XX} and {@code +} escapes undone, the bytes read as strict UTF-8. */
  private static String percentDecoded(String field, String raw) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(raw.length());
    for (int i = 0; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (c == '+') {
        out.write(' ');
      } else if (c == '%') {
        int hi = i + 2 < raw.length() ? Character.digit(raw.charAt(i + 1), 16) : -1;
        int lo = hi < 0 ? -1 : Character.digit(raw.charAt(i + 2), 16);
        if (lo < 0) {
          throw ApiException.badRequest(null, "malformed form field '" + field + "'");
        }
        out.write(hi * 16 + lo);
        i += 2;
      } else if (c > 0x7f) {
        throw ApiException.badRequest(
            null, "form field '" + field + "' has an unescaped non-ASCII character");
      } else {
        out.write(c);
      }
    }
    return utf8(field, out.toByteArray());
  }

  /** The value of a Content-Type parameter ({@code charset}, {@code boundary}), or null. */
  private static String parameter(String contentType, String name) {
    return Arrays.stream(contentType.split(";"))
        .skip(1)
        .map(String::trim)
        .filter(p -> p.toLowerCase(Locale.ROOT).startsWith(name + "="))
        .map(p -> p.substring(name.length() + 1))
        .map(v -> v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"") ? unquote(v) : v)
        .findFirst()
        .orElse(null);
  }

  private static String boundary(String contentType) {
    String b = parameter(contentType, "boundary");
    if (b == null || b.isEmpty() || b.length() > 200) {
      throw ApiException.badRequest(null, "multipart body without a boundary");
    }
    return b;
  }

  private static String unquote(String s) {
    return s.substring(1, s.length() - 1);
  }
}
