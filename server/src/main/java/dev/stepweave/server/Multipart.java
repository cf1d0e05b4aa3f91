package dev.stepweave.server;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fields of a multipart/form-data body (RFC 7578): text parts, and file parts for the fields
 * that take a file (an upload anywhere else is refused naming the field).
 */
final class Multipart {
  private static final byte[] CRLF = {'\r', '\n'};
  private static final byte[] HEADER_END = {'\r', '\n', '\r', '\n'};
  private static final Pattern NAME = Pattern.compile("(?i);\\s*name=\"([^\"]*)\"");
  private static final Pattern FILENAME = Pattern.compile("(?i);\\s*filename\\*?=");
  private static final Pattern QUOTED_FILENAME = Pattern.compile("(?i);\\s*filename=\"([^\"]*)\"");

  private Multipart() {}

  /**
   * A file part: the name the client gave it (empty when none), its declared {@code Content-Type}
   * (null when none) and its bytes.
   */
  record Upload(String filename, String contentType, byte[] bytes) {}

  /** The text parts and the file parts, each by field name; a name is in one of them at most. */
  record Parts(Map<String, String> fields, Map<String, Upload> files) {}

  static Parts parse(String boundary, byte[] body, Set<String> fileFields) {
    byte[] delimiter = ("--" + boundary).getBytes(StandardCharsets.ISO_8859_1);
    Map<String, String> fields = new LinkedHashMap<>();
    Map<String, Upload> files = new LinkedHashMap<>();
    int at = indexOf(body, delimiter, 0);
    if (at < 0) {
      throw malformed("no boundary line");
    }
    while (true) {
      int afterDelimiter = at + delimiter.length;
      if (startsWith(body, afterDelimiter, new byte[] {'-', '-'})) {
        return new Parts(fields, files); // the closing delimiter
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
      String disposition =
          header(headers, "content-disposition")
              .orElseThrow(() -> malformed("part without Content-Disposition"));
      Matcher m = NAME.matcher(disposition);
      if (!m.find()) {
        throw malformed("part without a name");
      }
      String name = m.group(1);
      if (fields.containsKey(name) || files.containsKey(name)) {
        throw ApiException.badRequest(name, "field '" + name + "' given twice");
      }
      if (FILENAME.matcher(disposition).find()) {
        if (!fileFields.contains(name)) {
          throw ApiException.badRequest(
              name, "file uploads are not supported (field '" + name + "')");
        }
        Matcher f = QUOTED_FILENAME.matcher(disposition);
        files.put(
            name,
            new Upload(
                f.find() ? f.group(1) : "",
                header(headers, "content-type").orElse(null),
                Arrays.copyOfRange(body, contentStart, next)));
      } else {
        fields.put(
            name, new String(body, contentStart, next - contentStart, StandardCharsets.UTF_8));
      }
      at = next + CRLF.length;
    }
  }

  /** The value of the part header {@code name} (lower case), when the part has it. */
  private static java.util.Optional<String> header(String headers, String name) {
    return headers
        .lines()
        .filter(l -> l.toLowerCase(Locale.ROOT).startsWith(name + ":"))
        .map(l -> l.substring(name.length() + 1).strip())
        .findFirst();
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
