package dev.stepweave.server;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

/**
 * {@code GET /openapi.json}: the API's OpenAPI 3.1 description, a resource of this module kept to
 * the server's routes, fields, objects and error codes by {@code OpenApiDriftTest}.
 */
final class OpenApi {
  static final String ROUTE = "openapi.json";

  private static final byte[] DOCUMENT = read();

  private OpenApi() {}

  static void send(Call call) throws IOException {
    call.setHeader("Cache-Control", "no-cache");
    call.sendBytes(200, "application/json", DOCUMENT);
  }

  private static byte[] read() {
    try (InputStream in = OpenApi.class.getResourceAsStream(ROUTE)) {
      if (in == null) {
        throw new IllegalStateException(ROUTE + " is missing from the jar");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
