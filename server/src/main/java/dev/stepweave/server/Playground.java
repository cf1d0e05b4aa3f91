package dev.stepweave.server;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;

/**
 * The browser playground: one page, its script and its style sheet, read once from the module's
 * resources and served at {@code /} without a key (a browser's navigation sends none; the page asks
 * for the key and sends it on every API call). It calls only the public API the SDKs use. Its
 * Content-Security-Policy allows nothing but this origin: no inline script or style, no other host,
 * no framing.
 */
final class Playground {
  /** What the page may load: this origin's script and style, previews as data URLs, videos. */
  static final String CONTENT_SECURITY_POLICY =
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:;"
          + " media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none';"
          + " form-action 'none'; frame-ancestors 'none'";

  private record Asset(String contentType, byte[] bytes) {}

  /** By route (the path without its leading '/'). */
  private static final Map<String, Asset> ASSETS =
      Map.of(
          "", asset("index.html", "text/html; charset=utf-8"),
          "playground.js", asset("playground.js", "text/javascript; charset=utf-8"),
          "playground.css", asset("playground.css", "text/css; charset=utf-8"));

  private Playground() {}

  static void send(Call call, String route) throws IOException {
    Asset a = ASSETS.get(route);
    call.setHeader("Content-Security-Policy", CONTENT_SECURITY_POLICY);
    call.setHeader("X-Content-Type-Options", "nosniff");
    call.setHeader("Referrer-Policy", "no-referrer");
    call.setHeader("Cache-Control", "no-cache");
    call.sendBytes(200, a.contentType(), a.bytes());
  }

  private static Asset asset(String name, String contentType) {
    try (InputStream in = Playground.class.getResourceAsStream("playground/" + name)) {
      if (in == null) {
        throw new IllegalStateException("the playground's " + name + " is missing from the jar");
      }
      return new Asset(contentType, in.readAllBytes());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
