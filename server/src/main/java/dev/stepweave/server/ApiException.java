package dev.stepweave.server;

/**
 * A call the server answers with an error: the HTTP status and OpenAI's error object ({@code
 * message}, {@code type}, {@code param}, {@code code}).
 */
final class ApiException extends RuntimeException {
  private final int status;
  private final String type;
  private final String param;
  private final String code;

  ApiException(int status, String type, String param, String code, String message) {
    super(message);
    this.status = status;
    this.type = type;
    this.param = param;
    this.code = code;
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

  int status() {
    return status;
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
}
