package dev.stepweave.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reading bounded bodies and writing JSON, errors and files on one HTTP exchange. */
final class Exchanges {
  // Every body is bounded by the call's limit before it is parsed, so Jackson's own string limit
  // (20 M chars) must not refuse an input image's data URL first.
  static final ObjectMapper JSON =
      new ObjectMapper(
          com.fasterxml.jackson.core.JsonFactory.builder()
              .streamReadConstraints(
                  com.fasterxml.jackson.core.StreamReadConstraints.builder()
                      .maxStringLength(Integer.MAX_VALUE)
                      .build())
              .build());

  private Exchanges() {}

  /**
   * The whole body, refusing (413) one larger than {@code maxBytes} without buffering more than
   * that. A modestly oversized body is read and discarded first, so that the client, still sending,
   * receives the 413 instead of a reset connection.
   */
  static byte[] readBody(HttpExchange ex, int maxBytes) throws IOException {
    long discardLimit = 4L * maxBytes;
    String declared = ex.getRequestHeaders().getFirst("Content-Length");
    try (InputStream in = ex.getRequestBody()) {
      if (declared != null) {
        long length;
        try {
          length = Long.parseLong(declared.trim());
        } catch (NumberFormatException e) {
          throw ApiException.badRequest(null, "Content-Length is not a number: " + declared);
        }
        if (length > maxBytes) {
          discard(in, length <= discardLimit ? length : 0);
          throw tooLarge(maxBytes);
        }
      }
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buf = new byte[8192];
      int n;
      while ((n = in.read(buf)) > 0) {
        if (out.size() + n > maxBytes) {
          discard(in, discardLimit);
          throw tooLarge(maxBytes);
        }
        out.write(buf, 0, n);
      }
      return out.toByteArray();
    }
  }

  private static void discard(InputStream in, long limit) throws IOException {
    byte[] buf = new byte[8192];
    long read = 0;
    int n;
    while (read < limit && (n = in.read(buf)) > 0) {
      read += n;
    }
  }

  private static ApiException tooLarge(int maxBytes) {
    return new ApiException(
        413,
        "invalid_request_error",
        null,
        "request_too_large",
        "request body is larger than " + maxBytes + " bytes");
  }

  static void sendJson(HttpExchange ex, int status, Object body) throws IOException {
    byte[] bytes = JSON.writeValueAsBytes(body);
    ex.getResponseHeaders().set("Content-Type", "application/json");
    ex.getResponseHeaders().set(ApiJson.SCHEMA_HEADER, ApiJson.SCHEMA_VERSION);
    send(ex, status, bytes);
  }

  static void sendError(HttpExchange ex, ApiException e) throws IOException {
    ObjectNode error = JSON.createObjectNode();
    error.put("message", e.getMessage());
    error.put("type", e.type());
    error.put("param", e.param());
    error.put("code", e.code());
    ObjectNode body = JSON.createObjectNode();
    body.set("error", error);
    if (e.status() == 429 || e.status() == 503) {
      ex.getResponseHeaders().set("Retry-After", "5");
    }
    sendJson(ex, e.status(), body);
  }

  static void sendText(HttpExchange ex, int status, String contentType, String text)
      throws IOException {
    ex.getResponseHeaders().set("Content-Type", contentType);
    send(ex, status, text.getBytes(StandardCharsets.UTF_8));
  }

  static void sendFile(HttpExchange ex, String contentType, Path file) throws IOException {
    ex.getResponseHeaders().set("Content-Type", contentType);
    ex.sendResponseHeaders(200, Files.size(file));
    try (OutputStream out = ex.getResponseBody()) {
      Files.copy(file, out);
    }
  }

  private static void send(HttpExchange ex, int status, byte[] bytes) throws IOException {
    ex.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(bytes);
    }
  }
}
