package dev.stepweave.server;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.MultiPart;
import org.eclipse.jetty.http.MultiPartFormData;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.io.content.ByteBufferContentSource;
import org.eclipse.jetty.util.Promise;

/**
 * The fields of a multipart/form-data body (RFC 7578), parsed by Jetty's {@link MultiPartFormData}:
 * text parts, and file parts for the fields that take a file (an upload anywhere else is refused
 * naming the field). The body is already read and bounded, so every part stays in memory.
 */
final class Multipart {
  private static final int MAX_PARTS = 256;

  private Multipart() {}

  /**
   * A file part: the name the client gave it (empty when none), its declared {@code Content-Type}
   * (null when none) and its bytes.
   */
  record Upload(String filename, String contentType, byte[] bytes) {}

  /** The text parts and the file parts, each by field name; a name is in one of them at most. */
  record Parts(Map<String, String> fields, Map<String, Upload> files) {}

  static Parts parse(String boundary, byte[] body, Set<String> fileFields) {
    MultiPartFormData.Parser parser = new MultiPartFormData.Parser(boundary);
    parser.setMaxMemoryFileSize(body.length + 1L);
    parser.setMaxLength(body.length + 1L);
    parser.setMaxParts(MAX_PARTS);
    MultiPartFormData.Parts parts;
    try {
      CompletableFuture<MultiPartFormData.Parts> parsed = new CompletableFuture<>();
      parser.parse(
          new ByteBufferContentSource(ByteBuffer.wrap(body)), Promise.Invocable.toPromise(parsed));
      parts = parsed.get();
    } catch (ExecutionException e) {
      throw malformed(e.getCause() == null ? null : e.getCause().getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw malformed("interrupted");
    }
    try (parts) {
      Map<String, String> fields = new LinkedHashMap<>();
      Map<String, Upload> files = new LinkedHashMap<>();
      for (MultiPart.Part part : parts) {
        String name = part.getName();
        if (name == null) {
          throw malformed("part without a name");
        }
        if (fields.containsKey(name) || files.containsKey(name)) {
          throw ApiException.badRequest(name, "field '" + name + "' given twice");
        }
        byte[] bytes = bytes(part);
        if (part.getFileName() != null) {
          if (!fileFields.contains(name)) {
            throw ApiException.badRequest(
                name, "file uploads are not supported (field '" + name + "')");
          }
          files.put(
              name,
              new Upload(
                  part.getFileName(), part.getHeaders().get(HttpHeader.CONTENT_TYPE), bytes));
        } else {
          fields.put(name, FormFields.utf8(name, bytes));
        }
      }
      return new Parts(fields, files);
    }
  }

  private static byte[] bytes(MultiPart.Part part) {
    try {
      ByteBuffer b = Content.Source.asByteBuffer(part.getContentSource());
      byte[] out = new byte[b.remaining()];
      b.get(out);
      return out;
    } catch (IOException e) {
      throw malformed("unreadable part '" + part.getName() + "'");
    }
  }

  private static ApiException malformed(String why) {
    String reason = why == null || why.isBlank() ? "unreadable" : why.lines().findFirst().get();
    return ApiException.badRequest(null, "malformed multipart body: " + reason);
  }
}
