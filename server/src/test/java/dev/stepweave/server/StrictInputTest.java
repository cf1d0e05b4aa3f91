package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Bodies a lenient parser would guess at are refused, each naming what is wrong. */
@Timeout(60)
class StrictInputTest {
  @TempDir static Path tmp;
  static Harness h;

  @BeforeAll
  static void start() throws Exception {
    h = new Harness(tmp.resolve("artifacts"));
  }

  @AfterAll
  static void stop() {
    h.close();
  }

  private static Harness.Reply post(String contentType, byte[] body, String... headers) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(h.uri("/v1/videos"))
            .POST(HttpRequest.BodyPublishers.ofByteArray(body));
    if (contentType != null) {
      b.header("Content-Type", contentType);
    }
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return h.send(b);
  }

  private static Harness.Reply postJson(String json) {
    return post("application/json", json.getBytes(StandardCharsets.UTF_8));
  }

  private static void refused(
      Harness.Reply r, int status, String code, String param, String message) {
    assertEquals(status, r.status(), r::text);
    JsonNode e = r.json().get("error");
    assertEquals(code, e.get("code").asText(), r::text);
    assertEquals(param, e.get("param").isNull() ? null : e.get("param").asText(), r::text);
    assertEquals(message, e.get("message").asText());
    assertTrue(h.get("/v1/videos").json().get("data").isEmpty(), "nothing was queued");
  }

  @Test
  void trailingDataAfterTheJsonValue() {
    refused(
        postJson("{\"prompt\":\"a\"} {\"prompt\":\"b\"}"),
        400,
        "invalid_value",
        null,
        "body is not valid JSON: unexpected data after the JSON value");
    refused(
        postJson("{\"prompt\":\"a\"}garbage"),
        400,
        "invalid_value",
        null,
        "body is not valid JSON: Unrecognized token 'garbage': was expecting (JSON String,"
            + " Number, Array, Object or token 'null', 'true' or 'false')");
  }

  @Test
  void duplicateKeys() {
    refused(
        postJson("{\"prompt\":\"a\",\"prompt\":\"b\"}"),
        400,
        "invalid_value",
        null,
        "body is not valid JSON: duplicate key 'prompt'");
    refused(
        postJson("{\"prompt\":\"a\",\"cache\":{\"x\":{},\"x\":{}}}"),
        400,
        "invalid_value",
        null,
        "body is not valid JSON: duplicate key 'x'");
  }

  @Test
  void loneSurrogates() {
    refused(
        postJson("{\"prompt\":\"ab\\ud800\"}"),
        400,
        "invalid_value",
        "prompt",
        "prompt has a lone UTF-16 surrogate at character 2 (\\ud800); strings must be valid"
            + " Unicode");
    refused(
        postJson("{\"prompt\":\"a\",\"negative_prompt\":\"\\udc00x\"}"),
        400,
        "invalid_value",
        "negative_prompt",
        "negative_prompt has a lone UTF-16 surrogate at character 0 (\\udc00); strings must be"
            + " valid Unicode");
    // A surrogate pair is one valid character and passes.
    Harness.Reply pair =
        postJson("{\"prompt\":\"\\ud83d\\ude00\",\"num_frames\":1,\"size\":\"16x16\"}");
    assertEquals(200, pair.status(), pair::text);
    assertEquals("\uD83D\uDE00", pair.json().get("prompt").asText());
    h.awaitTerminal(pair.json().get("id").asText());
    h.delete("/v1/videos/" + pair.json().get("id").asText());
  }

  @Test
  void invalidUtf8InFormsAndJson() {
    byte[] multipart =
        ("--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nab\u00ff\r\n--b--\r\n")
            .getBytes(StandardCharsets.ISO_8859_1);
    refused(
        post("multipart/form-data; boundary=b", multipart),
        400,
        "invalid_value",
        "prompt",
        "field 'prompt' is not valid UTF-8");
    refused(
        post(
            "application/x-www-form-urlencoded",
            "prompt=ab%ED%A0%80".getBytes(StandardCharsets.US_ASCII)),
        400,
        "invalid_value",
        "prompt",
        "field 'prompt' is not valid UTF-8");
    byte[] json = "{\"prompt\":\"ab\u00ff\"}".getBytes(StandardCharsets.ISO_8859_1);
    Harness.Reply r = post("application/json", json);
    assertEquals(400, r.status(), r::text);
    assertTrue(
        r.json()
            .get("error")
            .get("message")
            .asText()
            .startsWith("body is not valid JSON: Invalid UTF-8"),
        r::text);
  }

  @Test
  void aMissingOrWrongContentType() {
    refused(
        post(null, "{\"prompt\":\"a\"}".getBytes(StandardCharsets.UTF_8)),
        415,
        "unsupported_media_type",
        null,
        "the body has no Content-Type; send application/json or multipart/form-data");
    refused(
        post("text/plain", "{\"prompt\":\"a\"}".getBytes(StandardCharsets.UTF_8)),
        415,
        "unsupported_media_type",
        null,
        "send application/json or multipart/form-data, not 'text/plain'");
    refused(
        post("application/json; charset=iso-8859-1", "{\"prompt\":\"a\"}".getBytes()),
        415,
        "unsupported_media_type",
        null,
        "application/json bodies must be UTF-8, not charset=iso-8859-1");
    refused(
        post("application/jsonx", "{\"prompt\":\"a\"}".getBytes()),
        415,
        "unsupported_media_type",
        null,
        "send application/json or multipart/form-data, not 'application/jsonx'");
    // Parameters and case do not matter.
    Harness.Reply ok =
        post(
            "Application/JSON; charset=UTF-8",
            "{\"prompt\":\"a\",\"num_frames\":1,\"size\":\"16x16\"}".getBytes());
    assertEquals(200, ok.status(), ok::text);
    h.awaitTerminal(ok.json().get("id").asText());
    h.delete("/v1/videos/" + ok.json().get("id").asText());
  }

  @Test
  void anUnsupportedContentEncoding() {
    refused(
        post("application/json", new byte[] {0x1f, (byte) 0x8b, 8, 0}, "Content-Encoding", "gzip"),
        415,
        "unsupported_content_encoding",
        null,
        "Content-Encoding 'gzip' is not supported; send the body uncompressed");
    Harness.Reply identity =
        post(
            "application/json",
            "{\"prompt\":\"a\",\"num_frames\":1,\"size\":\"16x16\"}".getBytes(),
            "Content-Encoding",
            "identity");
    assertEquals(200, identity.status(), identity::text);
    h.awaitTerminal(identity.json().get("id").asText());
    h.delete("/v1/videos/" + identity.json().get("id").asText());
  }
}
