package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The playground's files over HTTP, without a browser: served at {@code /} without a key but with
 * the Host check, under a Content-Security-Policy that allows no inline script or style and no
 * other origin, and with nothing inline in the page for it to refuse; absent on the admin port.
 */
@Timeout(60)
class PlaygroundPageTest {
  private static final String KEY = "sk-page-test-0123456789abcdef";

  @TempDir Path tmp;

  @Test
  void thePageAndItsFilesNeedNoKeyAndCarryTheirPolicy() throws IOException {
    Path keys = tmp.resolve("keys.txt");
    Files.writeString(keys, KEY + " team\n");
    try (Harness h =
        new Harness(tmp.resolve("a"), new HttpConfig.Builder().apiKeyFile(keys).build())) {
      Map<String, String> types =
          Map.of(
              "/", "text/html; charset=utf-8",
              "/playground.js", "text/javascript; charset=utf-8",
              "/playground.css", "text/css; charset=utf-8");
      for (var e : types.entrySet()) {
        Harness.Reply r = h.get(e.getKey());
        assertEquals(200, r.status(), e.getKey());
        assertEquals(e.getValue(), r.contentType(), e.getKey());
        String csp = r.header("Content-Security-Policy");
        assertTrue(csp.startsWith("default-src 'self'; script-src 'self'; style-src 'self';"), csp);
        assertFalse(csp.contains("unsafe"), csp);
        assertTrue(csp.contains("frame-ancestors 'none'"), csp);
        assertEquals("nosniff", r.header("X-Content-Type-Options"));
      }
      assertEquals(401, h.get("/v1/videos").status(), "the API behind it still needs the key");
      assertEquals(405, h.postJson("/", Map.of()).status(), "the page is GET only");

      RawHttp.Answer rebound = RawHttp.get(h.server.baseUri(), "/", "evil.example");
      assertEquals(403, rebound.status(), "a rebound DNS name gets no page: " + rebound.body());
      assertTrue(rebound.body().contains("host_not_allowed"), rebound.body());
    }
  }

  @Test
  void thePageHasNothingInlineThePolicyWouldRefuse() throws IOException {
    try (Harness h = new Harness(tmp.resolve("a"))) {
      String html = h.get("/").text();
      assertFalse(Pattern.compile("<script(?![^>]*\\bsrc=)").matcher(html).find(), "inline script");
      assertFalse(Pattern.compile("\\sstyle=").matcher(html).find(), "inline style attribute");
      assertFalse(html.contains("<style"), "inline style sheet");
      assertFalse(Pattern.compile("\\son[a-z]+=").matcher(html).find(), "inline event handler");
      assertFalse(
          Pattern.compile("(src|href)=\"(https?:)?//").matcher(html).find(), "another host");
      String js = h.get("/playground.js").text();
      assertFalse(js.contains("eval(") || js.contains("new Function"), "code from strings");
      assertFalse(
          js.contains("new EventSource("), "EventSource cannot send the key: streams use fetch");
    }
  }

  @Test
  void theAdminPortServesNoPage() throws IOException {
    try (Harness h =
        new Harness(tmp.resolve("a"), new HttpConfig.Builder().admin("127.0.0.1", 0).build())) {
      URI admin = h.server.adminUri();
      assertEquals(404, RawHttp.get(admin, "/", "127.0.0.1").status());
      assertEquals(404, RawHttp.get(admin, "/openapi.json", "127.0.0.1").status());
    }
  }
}
