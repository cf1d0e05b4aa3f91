package dev.stepweave.server;

/**
 * A call the server answers with an error: the HTTP status and OpenAI's error object ({@code
 * message}, {@code type}, {@code param}, {@code code}); a 429 or 503 also says when to retry.
 */
final class ApiException extends RuntimeException {
  private static final long DEFAULT_RETRY_SECONDS = 5;

  private final int status;
  private final String type;
  private final String param;
  private final String code;
  private final long retryAfterSeconds;

  ApiException(int status, String type, String param, String code, String message) {
    this(status, type, param, code, message, DEFAULT_RETRY_SECONDS);
  }

  ApiException(
      int status, String type, String param, String code, String message, long retryAfterSeconds) {
    super(message);
    this.status = status;
    this.type = type;
    this.param = param;
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  static ApiException badRequest(String param, String message) {
    return new ApiException(400, "invalid_request_error", param, "invalid_value", message);
  }

  static ApiException notFound(String message) {
    return new ApiException(404, "invalid_request_error", null, "not_found", message);
  }

  static ApiException conflict(String code, String message) {
    return new ApiException(409, "invalid_request_error", null, code, message);
  }

  static ApiException forbidden(String code, String message) {
    return new ApiException(403, "invalid_request_error", null, code, message);
  }

  int status() {
    return status;
  }

  String message() {
    return getMessage();
  }

  String type() {
    return type;
  }

  String param() {
    return param;
  }

  String code() {
    return code;
  }

  long retryAfterSeconds() {
    return retryAfterSeconds;
  }
}
