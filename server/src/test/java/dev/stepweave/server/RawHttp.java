package dev.stepweave.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 written byte for byte on a socket: for what a well-behaved client library will not send
 * (a broken request line, a foreign Host header, oversized headers).
 */
final class RawHttp {
  private RawHttp() {}

  /** A response as read off the wire: status, headers (lower-case names) and body. */
  record Answer(int status, Map<String, String> headers, String body) {}

  /** Sends {@code request} as is and reads the answer until the server closes the connection. */
  static Answer exchange(URI base, String request) throws IOException {
    try (Socket s = new Socket(base.getHost(), base.getPort())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
      s.getOutputStream().flush();
      return parse(readAll(s.getInputStream()));
    }
  }

  /** A GET of {@code path} with the given Host and extra header lines, closing after it. */
  static Answer get(URI base, String path, String host, String... headerLines) throws IOException {
    StringBuilder r = new StringBuilder("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n");
    for (String line : headerLines) {
      r.append(line).append("\r\n");
    }
    return exchange(base, r.append("Connection: close\r\n\r\n").toString());
  }

  private static byte[] readAll(InputStream in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[8192];
    int n;
    try {
      while ((n = in.read(buf)) > 0) {
        out.write(buf, 0, n);
      }
    } catch (java.net.SocketException e) {
      // a reset after the answer was sent: what was read is the answer
    }
    return out.toByteArray();
  }

  private static Answer parse(byte[] raw) {
    String text = new String(raw, StandardCharsets.UTF_8);
    int end = text.indexOf("\r\n\r\n");
    if (end < 0) {
      throw new AssertionError("no complete response: '" + text + "'");
    }
    String[] lines = text.substring(0, end).split("\r\n");
    int status = Integer.parseInt(lines[0].split(" ")[1]);
    Map<String, String> headers = new LinkedHashMap<>();
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      headers.put(
          lines[i].substring(0, colon).strip().toLowerCase(Locale.ROOT),
          lines[i].substring(colon + 1).strip());
    }
    return new Answer(status, headers, text.substring(end + 4));
  }
}
