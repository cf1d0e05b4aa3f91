package dev.stepweave.server;

import dev.stepweave.core.request.ModalPart;
import dev.stepweave.media.ImageDecoder;
import dev.stepweave.media.InvalidImageException;
import java.util.Base64;
import java.util.Locale;
import java.util.Map;

/**
 * A video call's input image, {@code input_reference}: a multipart file part, or a base64 data URL
 * ({@code data:image/png;base64,…}), decoded in memory (nothing touches the disk) to the RGB image
 * the request carries. The server fetches nothing, so a remote URL is refused. Every refusal is a
 * 400 naming {@code input_reference}.
 */
final class InputReference {
  private static final String FIELD = FormFields.INPUT_REFERENCE;

  /** The accepted content types and the format ImageDecoder reports for each. */
  private static final Map<String, String> TYPES =
      Map.of("image/png", "png", "image/jpeg", "jpeg", "image/webp", "webp");

  private InputReference() {}

  /**
   * A decoded input image and what the job object reports of it.
   *
   * @param format png, jpeg or webp, told from the content
   * @param bytes the size of the encoded file
   */
  record InputImage(ModalPart.Image image, String format, long bytes) {}

  /**
   * The image a multipart file part carries. Its declared type must be an accepted one; a part
   * without a type, or typed {@code application/octet-stream} (what clients send when they cannot
   * tell), is told by its content.
   */
  static InputImage fromUpload(Multipart.Upload upload, int maxBytes) {
    String declared = upload.contentType() == null ? null : mediaType(upload.contentType());
    if ("application/octet-stream".equals(declared)) {
      declared = null;
    }
    if (declared != null && !TYPES.containsKey(declared)) {
      throw wrongType(declared);
    }
    String what =
        upload.filename().isEmpty() ? FIELD : FIELD + " (file '" + upload.filename() + "')";
    checkSize(upload.bytes().length, maxBytes);
    return decode(upload.bytes(), declared, what);
  }

  /** The image a text value carries: a base64 data URL of an accepted type. */
  static InputImage fromText(String value, int maxBytes) {
    String v = value.strip();
    String lower = v.toLowerCase(Locale.ROOT);
    if (lower.startsWith("http://") || lower.startsWith("https://")) {
      throw refused(
          "input_reference URLs are not fetched (this server fetches nothing); send the image as a"
              + " data URL (data:image/png;base64,…) or a multipart file");
    }
    if (!lower.startsWith("data:")) {
      throw refused(
          "input_reference must be a data URL (data:image/png;base64,…) or a multipart file, got '"
              + (v.length() > 24 ? v.substring(0, 24) + "…" : v)
              + "'");
    }
    int comma = v.indexOf(',');
    if (comma < 0) {
      throw refused("input_reference is not a data URL: no ',' before the data");
    }
    String[] header = v.substring("data:".length(), comma).split(";");
    if (header.length < 2 || !header[header.length - 1].strip().equalsIgnoreCase("base64")) {
      throw refused("input_reference data URL must be base64-encoded (data:image/png;base64,…)");
    }
    String declared = mediaType(header[0]);
    if (!TYPES.containsKey(declared)) {
      throw wrongType(declared);
    }
    String data = v.substring(comma + 1).replaceAll("\\s", "");
    // Bound the decoded size before decoding: base64 holds 3 bytes per 4 characters.
    checkSize(
        data.length() / 4L * 3 - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0), maxBytes);
    byte[] file;
    try {
      file = Base64.getDecoder().decode(data);
    } catch (IllegalArgumentException e) {
      throw refused("input_reference data URL is not valid base64: " + e.getMessage());
    }
    return decode(file, declared, FIELD);
  }

  private static InputImage decode(byte[] file, String declared, String what) {
    ImageDecoder.Decoded d;
    try {
      d = ImageDecoder.decode(file, what);
    } catch (InvalidImageException e) {
      throw refused(e.getMessage());
    }
    if (declared != null && !TYPES.get(declared).equals(d.format())) {
      throw refused(
          what
              + " is declared "
              + declared
              + " but is a "
              + d.format().toUpperCase(Locale.ROOT)
              + " image");
    }
    return new InputImage(
        new ModalPart.Image(d.width(), d.height(), d.rgb(), d.sha256()), d.format(), file.length);
  }

  private static void checkSize(long bytes, int maxBytes) {
    if (bytes > maxBytes) {
      throw refused(
          "input_reference is "
              + bytes
              + " bytes, over the server's "
              + maxBytes
              + "-byte limit for an input image");
    }
  }

  /** "Image/PNG; charset=x" → "image/png". */
  private static String mediaType(String contentType) {
    int semi = contentType.indexOf(';');
    return (semi < 0 ? contentType : contentType.substring(0, semi))
        .strip()
        .toLowerCase(Locale.ROOT);
  }

  private static ApiException wrongType(String declared) {
    return refused(
        "input_reference has content type '"
            + declared
            + "'; send image/png, image/jpeg or image/webp");
  }

  private static ApiException refused(String message) {
    return ApiException.badRequest(FIELD, message);
  }
}
