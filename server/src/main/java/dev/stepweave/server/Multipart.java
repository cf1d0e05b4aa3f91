package dev.stepweave.server;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The text fields of a multipart/form-data body (RFC 7578). File parts are refused. */
final class Multipart {
  private static final byte[] CRLF = {'\r', '\n'};
  private static final byte[] HEADER_END = {'\r', '\n', '\r', '\n'};
  private static final Pattern NAME = Pattern.compile("(?i);\\s*name=\"([^\"]*)\"");
  private static final Pattern FILENAME = Pattern.compile("(?i);\\s*filename\\*?=");

  private Multipart() {}

  static Map<String, String> parse(String boundary, byte[] body) {
    byte[] delimiter = ("--" + boundary).getBytes(StandardCharsets.ISO_8859_1);
    Map<String, String> fields = new LinkedHashMap<>();
    int at = indexOf(body, delimiter, 0);
    if (at < 0) {
      throw malformed("no boundary line");
    }
    while (true) {
      int afterDelimiter = at + delimiter.length;
      if (startsWith(body, afterDelimiter, new byte[] {'-', '-'})) {
        return fields; // the closing delimiter
      }
      if (!startsWith(body, afterDelimiter, CRLF)) {
        throw malformed("boundary line not followed by CRLF");
      }
      int headersStart = afterDelimiter + 2;
      int headersEnd = indexOf(body, HEADER_END, headersStart);
      if (headersEnd < 0) {
        throw malformed("part without a blank line after its headers");
      }
      String headers =
          new String(body, headersStart, headersEnd - headersStart, StandardCharsets.UTF_8);
      int contentStart = headersEnd + HEADER_END.length;
      int next = indexOf(body, concat(CRLF, delimiter), contentStart);
      if (next < 0) {
        throw malformed("part without a closing boundary");
      }
      String name = partName(headers);
      if (fields.containsKey(name)) {
        throw ApiException.badRequest(name, "field '" + name + "' given twice");
      }
      fields.put(name, new String(body, contentStart, next - contentStart, StandardCharsets.UTF_8));
      at = next + CRLF.length;
    }
  }

  private static String partName(String headers) {
    String disposition =
        headers
            .lines()
            .filter(l -> l.toLowerCase(Locale.ROOT).startsWith("content-disposition:"))
            .findFirst()
            .orElseThrow(() -> malformed("part without Content-Disposition"));
    Matcher m = NAME.matcher(disposition);
    if (!m.find()) {
      throw malformed("part without a name");
    }
    if (FILENAME.matcher(disposition).find()) {
      throw ApiException.badRequest(
          m.group(1), "file uploads are not supported (field '" + m.group(1) + "')");
    }
    return m.group(1);
  }

  private static ApiException malformed(String why) {
    return ApiException.badRequest(null, "malformed multipart body: " + why);
  }

  private static boolean startsWith(byte[] data, int from, byte[] prefix) {
    return from + prefix.length <= data.length
        && Arrays.equals(data, from, from + prefix.length, prefix, 0, prefix.length);
  }

  private static int indexOf(byte[] data, byte[] needle, int from) {
    for (int i = from; i + needle.length <= data.length; i++) {
      if (startsWith(data, i, needle)) {
        return i;
      }
    }
    return -1;
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
